//! Every tool schema, at the widest tier, is portable: clients convert
//! schemas for model providers whose dialect has one `type` per schema and
//! no `const`, and for OpenAI's strict mode, where every property is
//! required and no object is open; they validate structuredContent
//! against outputSchema. So: no array-valued `type`, enums whose values
//! all have the declared type, no schema that constrains nothing, every
//! optional argument accepts `null` (what a strict model sends for it), no
//! `const`, no object open to undeclared keys. interop/convert.py runs the
//! real converters over the same listing.

#![allow(clippy::unwrap_used)]

use crate::common;

use panescan::testing::config::Tier;
use panescan::testing::mcp::listing::tools_listing;
use panescan::testing::tools::registry::Registry;
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

/// Where a strict model could not send `null` for an argument it means to
/// leave out, where a `const` or an open object stands, at any depth.
fn strict_problems(schema: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if obj.contains_key("const") {
        problems.push(format!("{path}: const (write an enum)"));
    }
    let is_object = obj.get("type") == Some(&Value::String("object".into()));
    if is_object && obj.get("additionalProperties") != Some(&Value::Bool(false)) {
        problems.push(format!("{path}: an object open to undeclared keys"));
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, prop) in obj
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !required.contains(&name.as_str()) && !common::validate(prop, &Value::Null).is_empty() {
            problems.push(format!("{path}.{name}: optional, and null is refused"));
        }
        strict_problems(prop, &format!("{path}.{name}"), problems);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get(key) {
            strict_problems(child, &format!("{path}.{key}"), problems);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for (i, b) in obj
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            strict_problems(b, &format!("{path}.{key}[{i}]"), problems);
        }
    }
}

#[test]
fn every_input_schema_is_ready_for_strict_mode() {
    let registry = Registry::for_tier(Tier::Destructive);
    let mut problems = Vec::new();
    let mut optional = 0;
    for (entry, schema) in registry.with_input_schemas() {
        strict_problems(schema, entry.name, &mut problems);
        optional += schema["properties"]
            .as_object()
            .map_or(0, |p| p.len())
            .saturating_sub(schema["required"].as_array().map_or(0, Vec::len));
    }
    assert!(optional > 100, "{optional} optional arguments");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_strict_check_sees_what_it_is_for() {
    let bad = serde_json::json!({
        "type": "object", "additionalProperties": false,
        "required": ["a"],
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer"},
            "c": {"oneOf": [{"const": "x"}, {"const": "y"}]},
            "d": {"anyOf": [{"type": "object"}, {"type": "null"}]},
            "e": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                  "properties": {"f": {"type": "boolean"}}}}
        }
    });
    let mut problems = Vec::new();
    strict_problems(&bad, "t", &mut problems);
    // b and f refuse null; c's two consts (c refuses null too); d opens an object.
    assert_eq!(problems.len(), 6, "{problems:#?}");
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
