//! Every tool schema, at the widest tier, is portable: clients convert
//! schemas for model providers whose dialect has one `type` per schema and
//! no `null`, and they validate structuredContent against outputSchema.
//! So: no array-valued `type`, enums whose values all have the declared
//! type, and no schema that constrains nothing.

use panescan::config::Tier;
use panescan::mcp::listing::tools_listing;
use panescan::tools::registry::Registry;
use serde_json::Value;

/// Keywords that constrain a value; a schema with none of them accepts
/// anything.
const CONSTRAINTS: &[&str] = &["type", "anyOf", "oneOf", "allOf", "enum", "const", "not"];

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_schema(schema: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        problems.push(format!("{path}: not an object schema"));
        return;
    };
    if !CONSTRAINTS.iter().any(|k| obj.contains_key(*k)) {
        problems.push(format!("{path}: constrains nothing"));
    }
    match obj.get("type") {
        Some(Value::String(t)) => {
            for v in obj
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let vt = type_of(v);
                if vt != t && !(t == "number" && vt == "integer") {
                    problems.push(format!("{path}: enum value {v} is not a {t}"));
                }
            }
        }
        Some(other) => problems.push(format!("{path}: type is {other}, not one name")),
        None => {}
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child @ Value::Object(_)) = obj.get(key) {
            check_schema(child, &format!("{path}.{key}"), problems);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for (i, child) in obj
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            check_schema(child, &format!("{path}.{key}[{i}]"), problems);
        }
    }
    for (name, child) in obj
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        check_schema(child, &format!("{path}.{name}"), problems);
    }
}

fn problems_of(listing: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for tool in listing.as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or("?");
        for key in ["inputSchema", "outputSchema"] {
            check_schema(&tool[key], &format!("{name}.{key}"), &mut problems);
        }
    }
    problems
}

#[test]
fn every_schema_has_one_type_per_property_and_constrains_every_field() {
    let registry = Registry::for_tier(Tier::Destructive);
    let listing = &tools_listing(&registry);
    assert!(
        listing.as_array().is_some_and(|t| t.len() > 20),
        "{listing}"
    );
    let problems = problems_of(listing);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_sees_what_it_is_for() {
    let bad = serde_json::json!([{
        "name": "t",
        "inputSchema": {"type": "object", "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": "string", "enum": ["x", null]}
        }},
        "outputSchema": {"type": "object", "properties": {"c": {"description": "anything"}}}
    }]);
    let problems = problems_of(&bad);
    assert_eq!(problems.len(), 3, "{problems:?}");
}
