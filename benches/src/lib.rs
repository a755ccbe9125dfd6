//! Support code for panescan's criterion benches (see `benches/`).
