//! `{field__op: value}` filters for the list tools.
//!
//! Filters run on the rows exactly as the tool returns them (their JSON), so
//! every returned field can be filtered and nothing else can. An unknown
//! field or operator is an error naming the valid ones: a typo must not look
//! like "no such panes".

use std::cmp::Ordering;

use regex::RegexBuilder;
use serde_json::{Map, Value};

use super::context::ToolError;

/// The operators, in the order error messages list them.
const OPS: &[&str] = &[
    "exact",
    "iexact",
    "contains",
    "icontains",
    "startswith",
    "istartswith",
    "endswith",
    "iendswith",
    "in",
    "nin",
    "regex",
    "iregex",
    "gt",
    "gte",
    "lt",
    "lte",
];

/// Patterns stay small: filters run on metadata, not pane text.
const MAX_REGEX_BYTES: usize = 1024;

#[derive(Debug)]
enum Test {
    Text { op: &'static str, value: String },
    Set { negate: bool, values: Vec<String> },
    Regex(regex::Regex),
    Compare { op: &'static str, value: String },
}

/// A compiled set of filters (all must hold).
#[derive(Debug, Default)]
pub struct Filters {
    tests: Vec<(String, Test)>,
}

impl Filters {
    /// Compiles `filters` (an object, or the same object as a JSON string,
    /// which some clients can only send) against the fields a row has.
    pub fn compile(filters: Option<&Value>, fields: &[String]) -> Result<Filters, ToolError> {
        let obj: Map<String, Value> = match filters {
            None | Some(Value::Null) => return Ok(Filters::default()),
            Some(Value::Object(o)) => o.clone(),
            Some(Value::String(s)) if s.trim().is_empty() => return Ok(Filters::default()),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(o)) => o,
                _ => {
                    return Err(ToolError::invalid(
                        "filters must be an object such as {\"pane_current_command__contains\": \"vim\"}",
                    ))
                }
            },
            Some(_) => {
                return Err(ToolError::invalid(
                    "filters must be an object such as {\"pane_current_command__contains\": \"vim\"}",
                ))
            }
        };
        let mut tests = Vec::new();
        for (key, value) in obj {
            let (field, op) = match key.rsplit_once("__") {
                Some((f, op)) => (f.to_owned(), op.to_owned()),
                None => (key.clone(), "exact".to_owned()),
            };
            if !fields.contains(&field) {
                return Err(ToolError::invalid(format!(
                    "unknown filter field {field:?}; fields: {}",
                    fields.join(", ")
                )));
            }
            let Some(op) = OPS.iter().copied().find(|o| *o == op) else {
                return Err(ToolError::invalid(format!(
                    "unknown filter operator {op:?} in {key:?}; operators: {}",
                    OPS.join(", ")
                )));
            };
            let test = match op {
                "in" | "nin" => Test::Set {
                    negate: op == "nin",
                    values: list_of(&value),
                },
                "regex" | "iregex" => {
                    let pattern = scalar(&value);
                    if pattern.len() > MAX_REGEX_BYTES {
                        return Err(ToolError::invalid(format!(
                            "filter {key:?}: pattern longer than {MAX_REGEX_BYTES} bytes"
                        )));
                    }
                    let re = RegexBuilder::new(&pattern)
                        .case_insensitive(op == "iregex")
                        .size_limit(1 << 20)
                        .dfa_size_limit(1 << 20)
                        .build()
                        .map_err(|e| ToolError::invalid(format!("filter {key:?}: {e}")))?;
                    Test::Regex(re)
                }
                "gt" | "gte" | "lt" | "lte" => Test::Compare {
                    op,
                    value: scalar(&value),
                },
                _ => Test::Text {
                    op,
                    value: scalar(&value),
                },
            };
            tests.push((field, test));
        }
        Ok(Filters { tests })
    }

    /// Whether no filter was given (every row passes).
    pub fn is_empty(&self) -> bool {
        self.tests.is_empty()
    }

    /// Does this row (as JSON) pass every filter?
    pub fn matches(&self, row: &Value) -> bool {
        self.tests.iter().all(|(field, test)| {
            let v = scalar(row.get(field).unwrap_or(&Value::Null));
            match test {
                Test::Text { op, value } => text_test(op, &v, value),
                Test::Set { negate, values } => values.contains(&v) != *negate,
                Test::Regex(re) => re.is_match(&v),
                Test::Compare { op, value } => {
                    let ord = compare(&v, value);
                    match *op {
                        "gt" => ord == Ordering::Greater,
                        "gte" => ord != Ordering::Less,
                        "lt" => ord == Ordering::Less,
                        _ => ord != Ordering::Greater,
                    }
                }
            }
        })
    }
}

fn text_test(op: &str, v: &str, value: &str) -> bool {
    let (lv, lvalue);
    let (a, b) = if op.starts_with('i') {
        lv = v.to_lowercase();
        lvalue = value.to_lowercase();
        (lv.as_str(), lvalue.as_str())
    } else {
        (v, value)
    };
    match op.trim_start_matches('i') {
        "exact" => a == b,
        "contains" => a.contains(b),
        "startswith" => a.starts_with(b),
        "endswith" => a.ends_with(b),
        _ => false,
    }
}

/// Numbers compare as numbers, everything else as text.
fn compare(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        _ => a.cmp(b),
    }
}

/// A JSON value as the text a filter compares (`null` is empty).
fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `in` / `nin` take a list, or a comma-separated string.
fn list_of(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(scalar).collect(),
        Value::String(s) => s.split(',').map(|p| p.trim().to_owned()).collect(),
        other => vec![scalar(other)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> Vec<String> {
        vec!["name".into(), "width".into(), "active".into()]
    }

    #[test]
    fn ops_work() {
        let row = json!({"name": "Vim-main", "width": 80, "active": true});
        let ok = |f: Value| Filters::compile(Some(&f), &fields()).unwrap().matches(&row);
        assert!(ok(json!({"name": "Vim-main"})));
        assert!(!ok(json!({"name__exact": "vim-main"})));
        assert!(ok(json!({"name__iexact": "vim-main"})));
        assert!(ok(json!({"name__contains": "m-m"})));
        assert!(ok(json!({"name__icontains": "VIM"})));
        assert!(ok(json!({"name__startswith": "Vim"})));
        assert!(ok(json!({"name__istartswith": "vim"})));
        assert!(ok(json!({"name__endswith": "main"})));
        assert!(ok(json!({"name__iendswith": "MAIN"})));
        assert!(ok(json!({"name__in": ["x", "Vim-main"]})));
        assert!(ok(json!({"name__nin": "x,y"})));
        assert!(ok(json!({"name__regex": "^V.m-"})));
        assert!(!ok(json!({"name__regex": "^v.m-"})));
        assert!(ok(json!({"name__iregex": "^v.m-"})));
        assert!(ok(json!({"width__gt": 79, "width__lt": "81"})));
        assert!(ok(json!({"width__gte": 80, "width__lte": 80})));
        assert!(ok(json!({"active": true})));
        assert!(ok(json!("{\"active\": \"true\"}")));
    }

    #[test]
    fn unknown_field_or_op_is_an_error_naming_valid_ones() {
        let e = Filters::compile(Some(&json!({"nme": "x"})), &fields()).unwrap_err();
        assert!(e.message.contains("name, width, active"), "{}", e.message);
        let e = Filters::compile(Some(&json!({"name__like": "x"})), &fields()).unwrap_err();
        assert!(e.message.contains("icontains"), "{}", e.message);
        assert!(Filters::compile(Some(&json!({"name__regex": "("})), &fields()).is_err());
    }
}
