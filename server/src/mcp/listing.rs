//! How a registry row reads as a `tools/list` entry: the registry knows the
//! tools, this module knows the protocol's field names.

use serde_json::{json, Value};

use crate::tools::registry::{Registry, ToolEntry};

/// The `tools` array of `tools/list` for every tool of `registry`.
pub fn tools_listing(registry: &Registry) -> Value {
    Value::Array(
        registry
            .with_input_schemas()
            .map(|(entry, input_schema)| listing_of(entry, input_schema))
            .collect(),
    )
}

fn listing_of(entry: &ToolEntry, input_schema: &Value) -> Value {
    json!({
        "name": entry.name,
        "title": entry.title,
        "description": entry.description,
        "inputSchema": input_schema,
        "outputSchema": (entry.output_schema)(),
        "annotations": {
            "readOnlyHint": entry.annotations.read_only,
            "destructiveHint": entry.annotations.destructive,
            "idempotentHint": entry.annotations.idempotent,
            "openWorldHint": entry.annotations.open_world,
        },
    })
}
