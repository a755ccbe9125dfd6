//! What the demo, the benches, the tests and the fuzz targets build on:
//! never used by `panescan serve`.
//!
//! A private tmux server started and always killed ([`private_server`]),
//! filled with real terminal output ([`corpus`], [`fixture`]); the raw
//! fetches a search is measured against ([`baseline`]); and the checks the
//! fuzz targets and their corpus-replay tests run ([`fuzzing`] through the
//! real dispatcher, [`fuzz_parsers`] on the small parsers).
//!
//! Must hold: nothing here is reached from `serve`'s path, and tmux/ (the
//! room below every other) names this room only in its own unit tests.

pub mod baseline;
pub mod command_counter;
pub mod corpus;
pub mod fixture;
#[doc(hidden)]
pub mod fuzz_parsers;
#[doc(hidden)]
pub mod fuzzing;
pub mod private_server;
