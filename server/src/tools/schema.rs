//! JSON Schemas for tool inputs and outputs, generated from the Rust types.
//!
//! Clients are picky: several reject `$ref`/`$defs`, every client requires
//! an object at the root of `outputSchema`, and every byte of a schema is
//! context an agent pays for. So subschemas are inlined, the root is forced
//! to `type: object`, and annotations that help no model (`$schema`,
//! `title`, integer `format`s) are dropped.
//!
//! Clients also convert schemas for model providers' function calling:
//! dialects with one `type` per schema (the OpenAPI subset), no `const`,
//! and OpenAI's strict mode, where every property is required and no
//! object is open. So no schema has an array-valued `type` (real
//! alternatives are `anyOf` branches); an optional argument accepts `null`
//! as "absent" and declares it as an `anyOf` branch; an enumeration is an
//! `enum`; an output field that may be absent is left out when it has no
//! value rather than sent as `null`. interop/convert.py runs the real
//! converters over every tier.

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
    enums_not_consts(&mut value);
    if let Value::Object(obj) = &mut value {
        obj.remove("$defs");
        obj.insert("type".into(), Value::String("object".into()));
    }
    value
}

/// The schema of a tool result: the root object's fields and the JSON type
/// of each, written as the server writes them (the
/// serialize contract: a field skipped when `None` is optional, never
/// `null`). No model reads an output schema before it calls a tool, and a
/// client needs it only to validate `structuredContent`; yet it was half of
/// `tools/list`, which every session pays. So descriptions, nested fields,
/// `required` lists and checks that constrain only the writer are left out:
/// what a result means is in the tool's description and its text.
pub fn output_schema_for<T: JsonSchema>() -> Value {
    let mut value = generate::<T>(Contract::Serialize);
    drop_null_of_optional(&mut value);
    shape_of(&value, 0)
}

/// `schema` reduced to the JSON types of its value: `type` (or the types
/// of its `anyOf`/`oneOf` branches) and, at the root (`depth` 0), its
/// `properties`; a value no type describes keeps its `enum` or `const`.
fn shape_of(schema: &Value, depth: u8) -> Value {
    let Some(obj) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    if let Some(t) = obj.get("type") {
        out.insert("type".into(), t.clone());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            let shapes: Vec<Value> = branches.iter().map(|b| shape_of(b, depth)).collect();
            out.insert("anyOf".into(), Value::Array(shapes));
        }
    }
    if depth == 0 {
        if let Some(Value::Object(props)) = obj.get("properties") {
            let shapes = props
                .iter()
                .map(|(name, p)| (name.clone(), shape_of(p, 1)))
                .collect();
            out.insert("properties".into(), Value::Object(shapes));
        }
    }
    if out.is_empty() {
        for key in ["enum", "const"] {
            if let Some(v) = obj.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
    }
    Value::Object(out)
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

/// The schema of tool arguments: like [`schema_for`], portable to strict
/// function calling. Every optional argument, at any depth, accepts `null`
/// and says so (`anyOf: [its schema, {"type": "null"}]`): a strict model
/// (OpenAI's strict mode, which makes every property required) sends
/// `null` for what it leaves out, and the registry drops such nulls
/// before decoding ([`drop_absent_nulls`]). Enumerations are `enum`, never
/// `const` inside `oneOf`, which several converters refuse. `minimum: 0`
/// on unsigned numbers goes: their type already refuses a negative value
/// with a clear error, and every tool pays these bytes in `tools/list`.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let mut value = schema_for::<T>();
    if let Some(Value::Object(props)) = value.get_mut("properties") {
        for prop in props.values_mut() {
            if let Value::Object(obj) = prop {
                if obj.get("minimum") == Some(&Value::from(0)) {
                    obj.remove("minimum");
                }
            }
        }
    }
    nullable_optional(&mut value);
    value
}

/// The keywords that annotate a schema without constraining its value:
/// they stay beside the `anyOf` of a nullable property.
const ANNOTATIONS: &[&str] = &["description", "title", "default", "examples", "deprecated"];

/// Makes every property that is not required accept `null`, at any depth
/// (objects inside arrays and `anyOf` branches included).
fn nullable_optional(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            let required = required_of(obj);
            for (key, child) in obj.iter_mut() {
                match (key.as_str(), child) {
                    ("properties", Value::Object(props)) => {
                        for (name, prop) in props.iter_mut() {
                            if let Value::Object(p) = prop {
                                if !required.contains(name) {
                                    drop_null(p);
                                    or_null(p);
                                    one_description(p);
                                }
                            }
                            nullable_optional(prop);
                        }
                    }
                    ("enum" | "const" | "default" | "examples", _) => {}
                    (_, child) => nullable_optional(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_optional),
        _ => {}
    }
}

fn required_of(obj: &Map<String, Value>) -> Vec<String> {
    obj.get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn is_null_branch(v: &Value) -> bool {
    v.get("type") == Some(&Value::String("null".into()))
}

/// `prop` (which no longer accepts `null`) as `anyOf: [prop, null]`, its
/// annotations left outside; an `anyOf` gets a `null` branch instead. A
/// schema that constrains nothing already accepts `null`.
fn or_null(prop: &mut Map<String, Value>) {
    let null = serde_json::json!({ "type": "null" });
    let constraining: Vec<String> = prop
        .keys()
        .filter(|k| !ANNOTATIONS.contains(&k.as_str()))
        .cloned()
        .collect();
    if constraining.is_empty() {
        return;
    }
    if constraining == ["anyOf"] {
        if let Some(Value::Array(branches)) = prop.get_mut("anyOf") {
            if !branches.iter().any(is_null_branch) {
                branches.push(null);
            }
            return;
        }
    }
    let mut branch = Map::new();
    for key in constraining {
        if let Some(v) = prop.remove(&key) {
            branch.insert(key, v);
        }
    }
    prop.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(branch), null]),
    );
}

/// A property's own description says what its branches' would (the doc
/// comment of an enum type, inlined): one is enough.
fn one_description(prop: &mut Map<String, Value>) {
    if !prop.contains_key("description") {
        return;
    }
    if let Some(Value::Array(branches)) = prop.get_mut("anyOf") {
        for b in branches.iter_mut().filter_map(Value::as_object_mut) {
            b.remove("description");
        }
    }
}

/// Drops the `null`s a strict caller sends for arguments it leaves out: a
/// key whose value is `null` and which its object's schema does not
/// require, in the arguments and in every object the schema describes
/// inside them (array items, `anyOf` branches). What is left decodes as if
/// the caller had left those keys out; a `null` for a required argument
/// stays and is refused by the decoder as before.
pub fn drop_absent_nulls(args: &mut Value, schema: &Value) {
    match args {
        Value::Object(obj) => {
            let Some(shape) = branch_with(schema, "properties") else {
                return;
            };
            let required = shape.as_object().map(required_of).unwrap_or_default();
            obj.retain(|k, v| !v.is_null() || required.contains(k));
            let props = shape.get("properties");
            for (k, v) in obj.iter_mut() {
                if let Some(sub) = props.and_then(|p| p.get(k)) {
                    drop_absent_nulls(v, sub);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = branch_with(schema, "items").and_then(|s| s.get("items")) {
                for v in items {
                    drop_absent_nulls(v, item);
                }
            }
        }
        _ => {}
    }
}

/// `schema` itself when it has `key`, else its first `anyOf`/`oneOf`
/// branch that has it.
fn branch_with<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    if schema.get(key).is_some() {
        return Some(schema);
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find(|b| b.get(key).is_some())
}

/// Writes an enumeration as `enum`: schemars writes a documented Rust enum
/// as `oneOf` of `const` branches, which converters for model providers
/// refuse (google-genai has no `const`; OpenAI's strict mode no `oneOf`).
/// The variants' doc comments become the description when the field has
/// none.
fn enums_not_consts(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            for key in ["oneOf", "anyOf"] {
                let Some(consts) = obj.get(key).and_then(const_branches) else {
                    continue;
                };
                obj.remove(key);
                let (values, docs): (Vec<Value>, Vec<String>) = consts.into_iter().unzip();
                let docs: Vec<String> = docs.into_iter().filter(|d| !d.is_empty()).collect();
                if !obj.contains_key("description") && !docs.is_empty() {
                    obj.insert("description".into(), Value::String(docs.join("; ")));
                }
                obj.insert("type".into(), Value::String("string".into()));
                obj.insert("enum".into(), Value::Array(values));
            }
            for (key, child) in obj.iter_mut() {
                if key != "enum" && key != "const" && key != "default" {
                    enums_not_consts(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(enums_not_consts),
        _ => {}
    }
}

/// The `(value, "value: doc")` of each branch when every branch is a
/// string `const` with at most a type and a description beside it.
fn const_branches(branches: &Value) -> Option<Vec<(Value, String)>> {
    let branches = branches.as_array()?;
    if branches.is_empty() {
        return None;
    }
    branches
        .iter()
        .map(|b| {
            let b = b.as_object()?;
            let c = b.get("const")?.as_str()?;
            let only_known = b
                .keys()
                .all(|k| matches!(k.as_str(), "const" | "type" | "description"));
            if !only_known {
                return None;
            }
            let doc = b
                .get("description")
                .and_then(Value::as_str)
                .map_or(String::new(), |d| {
                    format!("{c}: {}", d.trim_end_matches('.'))
                });
            Some((Value::String(c.to_owned()), doc))
        })
        .collect()
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
            // Nor does `default: false`: a flag left out is off.
            if matches!(obj.get("default"), Some(Value::Null | Value::Bool(false))) {
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
#[cfg(test)]
fn has_refs(value: &Value) -> bool {
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

    /// Which way; documented per variant, which schemars writes as one
    /// branch per variant.
    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Way {
        /// Up it goes.
        Up,
        /// Down it goes.
        Down,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    struct Step {
        name: String,
        #[serde(default)]
        quiet: bool,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    struct Args {
        id: String,
        count: Option<u32>,
        way: Option<Way>,
        #[serde(default)]
        steps: Vec<Step>,
        #[serde(default)]
        loud: bool,
    }

    fn accepts_null(prop: &Value) -> bool {
        prop["anyOf"]
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b == &serde_json::json!({"type": "null"})))
    }

    #[test]
    fn optional_arguments_accept_null_at_any_depth_and_enums_are_enums() {
        let s = input_schema_for::<Args>();
        let props = &s["properties"];
        assert!(!accepts_null(&props["id"]), "{s}");
        for name in ["count", "way", "steps", "loud"] {
            assert!(accepts_null(&props[name]), "{name}: {s}");
        }
        let step = &props["steps"]["anyOf"][0]["items"]["properties"];
        assert!(
            !accepts_null(&step["name"]) && accepts_null(&step["quiet"]),
            "{s}"
        );
        assert_eq!(props["way"]["anyOf"][0]["type"], "string", "{s}");
        assert_eq!(
            props["way"]["anyOf"][0]["enum"],
            serde_json::json!(["up", "down"]),
            "{s}"
        );
        let text = s.to_string();
        assert!(
            !text.contains("\"const\"") && !text.contains("oneOf"),
            "{s}"
        );
        assert!(!text.contains("\"default\":false"), "{s}");
    }

    #[test]
    fn nulls_for_optional_arguments_are_dropped_and_required_ones_kept() {
        let s = input_schema_for::<Args>();
        let mut args = serde_json::json!({
            "id": null, "count": null, "way": null, "loud": null,
            "steps": [{"name": "a", "quiet": null}]
        });
        drop_absent_nulls(&mut args, &s);
        assert_eq!(
            args,
            serde_json::json!({"id": null, "steps": [{"name": "a"}]})
        );
        let mut args = serde_json::json!({"id": "x", "count": null, "steps": null});
        drop_absent_nulls(&mut args, &s);
        let decoded: Args = serde_json::from_value(args).unwrap_or_else(|e| panic!("{e}"));
        assert!(decoded.count.is_none() && decoded.steps.is_empty() && !decoded.loud);
    }

    #[test]
    fn an_enum_without_a_field_doc_takes_its_variants_docs() {
        let mut v = serde_json::json!({"oneOf": [
            {"const": "up", "type": "string", "description": "Up it goes."},
            {"const": "down", "type": "string"}
        ]});
        enums_not_consts(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"type": "string", "enum": ["up", "down"], "description": "up: Up it goes"})
        );
    }
}
