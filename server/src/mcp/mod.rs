//! The MCP front end: JSON-RPC 2.0 over stdio, both protocol eras, the tool
//! registry.
