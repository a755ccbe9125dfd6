//! Control-mode reply framing that pane text cannot forge.
