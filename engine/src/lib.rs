//! panescan-engine: find lines in pane captures, under hard budgets.
//!
//! The engine knows nothing about tmux. It takes captures (bytes, an opaque
//! key, and the tmux line number of the first line) and returns the matching
//! lines and the flags of every budget that stopped the search.
