//! One module per tool family. Each tool turns validated arguments into a
//! structured result; the registry in [`crate::mcp`] describes them.
