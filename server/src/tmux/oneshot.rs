//! One-shot tmux processes: the fallback when there is nothing to attach to.
