//! JSON Schemas for tool inputs and outputs, generated from the Rust types.
//!
//! Clients are picky: several reject `$ref`/`$defs`, every client requires
//! an object at the root of `outputSchema`, and every byte of a schema is
//! context an agent pays for. So subschemas are inlined, the root is forced
//! to `type: object`, and annotations that help no model (`$schema`,
//! `title`, integer `format`s) are dropped.
//!
//! Clients also convert schemas for model providers whose dialect has one
//! `type` per schema and no `null` type (the OpenAPI subset of function
//! declarations). So no schema has an array-valued `type`: an optional
//! argument is written as its plain type (the caller leaves it out), an
//! output field that may be absent is left out when it has no value rather
//! than sent as `null`, and real alternatives are `anyOf` branches.

use schemars::generate::{Contract, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The schema of `T`, inlined and trimmed.
pub fn schema_for<T: JsonSchema>() -> Value {
    generate::<T>(Contract::Deserialize)
}

fn generate<T: JsonSchema>(contract: Contract) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
        s.contract = contract;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value: Value = schema.into();
    trim(&mut value, true);
    if let Value::Object(obj) = &mut value {
        obj.remove("$defs");
        obj.insert("type".into(), Value::String("object".into()));
    }
    value
}

/// The schema of a tool result: like [`schema_for`], and leaner still. The
/// server writes these values, so checks that only constrain the writer
/// (`minimum: 0` on unsigned counts, id patterns, nested `required` lists)
/// and the doc comments of nested structs are dropped; field descriptions
/// stay, since they tell a model what a flag means. It describes what the
/// server writes (the serialize contract): a field skipped when `None` is
/// optional and never `null`.
pub fn output_schema_for<T: JsonSchema>() -> Value {
    let mut value = generate::<T>(Contract::Serialize);
    drop_null_of_optional(&mut value);
    lean_output(&mut value, true);
    value
}

/// Takes `null` out of the types (and enums) of every property that is not
/// required, at any depth: such a property is left out instead of sent as
/// `null` (an argument by the caller, an output field by the server's
/// `skip_serializing_if`). Two or more types left become `anyOf` branches.
fn drop_null_of_optional(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            let required: Vec<String> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(props)) = obj.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        if let Value::Object(p) = prop {
                            drop_null(p);
                        }
                    }
                }
            }
            for child in obj.values_mut() {
                drop_null_of_optional(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_of_optional),
        _ => {}
    }
}

fn drop_null(prop: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = prop.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let Some(Value::Array(types)) = prop.get("type") else {
        return;
    };
    let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    match kept.as_slice() {
        [one] => {
            prop.insert("type".into(), one.clone());
        }
        [] => {}
        _ => {
            prop.remove("type");
            let branches = kept.into_iter().map(|t| serde_json::json!({ "type": t }));
            prop.insert("anyOf".into(), Value::Array(branches.collect()));
        }
    }
}

fn lean_output(value: &mut Value, root: bool) {
    match value {
        Value::Object(obj) => {
            if obj.get("minimum") == Some(&Value::from(0)) {
                obj.remove("minimum");
            }
            obj.remove("pattern");
            if !root {
                obj.remove("required");
                if obj.contains_key("properties") {
                    obj.remove("description");
                }
            }
            let id_doc = matches!(obj.get("description"), Some(Value::String(d)) if d.starts_with("tmux ") && d.contains(" id, e.g. "));
            if id_doc {
                obj.remove("description");
            }
            for (key, child) in obj.iter_mut() {
                if key == "properties" {
                    if let Value::Object(props) = child {
                        for prop in props.values_mut() {
                            lean_output(prop, false);
                        }
                    }
                } else if key != "enum" && key != "const" {
                    lean_output(child, false);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                lean_output(item, false);
            }
        }
        _ => {}
    }
}

/// The schema of tool arguments: like [`schema_for`], with optional
/// arguments written as their plain type. A caller leaves an optional
/// argument out rather than sending `null` (which is still accepted), so
/// `"type": ["integer", "null"]` says nothing `"type": "integer"` does not;
/// likewise `minimum: 0` on unsigned numbers, whose type already refuses a
/// negative value with a clear error. Every tool pays these bytes in
/// `tools/list`.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let mut value = schema_for::<T>();
    drop_null_of_optional(&mut value);
    if let Some(Value::Object(props)) = value.get_mut("properties") {
        for prop in props.values_mut() {
            if let Value::Object(obj) = prop {
                if obj.get("minimum") == Some(&Value::from(0)) {
                    obj.remove("minimum");
                }
            }
        }
    }
    value
}

/// Removes what costs bytes and tells a model nothing.
fn trim(value: &mut Value, root: bool) {
    match value {
        Value::Object(obj) => {
            obj.remove("$schema");
            if root {
                obj.remove("title");
                // The tool's own description says it all; this would be the
                // doc comment of the argument struct (or of a flattened one).
                obj.remove("description");
            }
            // `default: null` on every optional field says nothing that
            // leaving the field out of `required` does not.
            if obj.get("default") == Some(&Value::Null) {
                obj.remove("default");
            }
            // `format: uint32` etc. are schemars' notes on Rust widths.
            if let Some(Value::String(f)) = obj.get("format") {
                if f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float" {
                    obj.remove("format");
                }
            }
            for (key, child) in obj.iter_mut() {
                // Property names are data, not schemas: recurse into each
                // property's schema, never treat a property called `title`
                // as an annotation.
                if key == "properties" {
                    if let Value::Object(props) = child {
                        for prop in props.values_mut() {
                            trim(prop, false);
                        }
                    }
                } else {
                    trim(child, false);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                trim(item, false);
            }
        }
        _ => {}
    }
}

/// True when the schema (anywhere) uses `$ref` or `$defs`.
pub fn has_refs(value: &Value) -> bool {
    match value {
        Value::Object(obj) => {
            obj.contains_key("$ref")
                || obj.contains_key("$defs")
                || obj.contains_key("definitions")
                || obj.values().any(has_refs)
        }
        Value::Array(items) => items.iter().any(has_refs),
        _ => false,
    }
}

/// The property names a root object schema declares.
pub fn property_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Closes an input schema: tools refuse arguments they do not know, and the
/// schema says so.
pub fn close_object(schema: &mut Value) {
    if let Value::Object(obj) = schema {
        obj.insert("additionalProperties".into(), Value::Bool(false));
        if !obj.contains_key("properties") {
            obj.insert("properties".into(), Value::Object(Map::new()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[allow(dead_code)]
    #[derive(JsonSchema, Serialize)]
    struct Inner {
        a: u32,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Serialize)]
    struct Outer {
        /// Inner things.
        items: Vec<Inner>,
        maybe: Option<Inner>,
        title: String,
    }

    #[test]
    fn inlined_and_object_rooted() {
        let s = schema_for::<Outer>();
        assert!(!has_refs(&s), "{s}");
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none());
        assert!(s["properties"]["title"].is_object());
        assert!(s["properties"]["items"]["items"]["properties"]["a"]
            .get("format")
            .is_none());
    }
}
