//! A strict caller (OpenAI's strict mode, as openai-agents converts MCP
//! tools) sends every argument a schema declares, `null` for each one it
//! leaves out. `panescan serve` must take that shape as if the nulls were
//! absent, for every tool and at any depth (the batch's operations), on a
//! private tmux server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;

use common::{validate, Serve};
use serde_json::{json, Map, Value};

/// The listed tools' input and output schemas, by name.
fn schemas(s: &mut Serve) -> HashMap<String, (Value, Value)> {
    let r = s.request_bare("tools/list");
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                (t["inputSchema"].clone(), t["outputSchema"].clone()),
            )
        })
        .collect()
}

/// Every declared argument: the given value, else `null`.
fn strict_shape(input_schema: &Value, given: &Value) -> Value {
    let mut args = Map::new();
    for name in input_schema["properties"].as_object().unwrap().keys() {
        args.insert(
            name.clone(),
            given.get(name).cloned().unwrap_or(Value::Null),
        );
    }
    Value::Object(args)
}

/// Calls `tool` in the strict shape: the shape must fit the listed schema,
/// the call succeed, and its result fit the output schema.
fn call_strict(
    s: &mut Serve,
    schemas: &HashMap<String, (Value, Value)>,
    tool: &str,
    given: Value,
) -> Value {
    let (input, output) = &schemas[tool];
    let args = strict_shape(input, &given);
    let errors = validate(input, &args);
    assert!(errors.is_empty(), "{tool} {args}: {errors:?}");
    let v = s.call_ok(tool, args);
    let errors = validate(output, &v);
    assert!(errors.is_empty(), "{tool}: {errors:?}\n{v}");
    v
}

#[test]
fn read_tools_take_null_for_every_argument_left_out() {
    let (tmux, mut s) = Serve::with_tmux("strict-read");
    s.initialize();
    let schemas = schemas(&mut s);
    tmux.run_ok(["send-keys", "-t", "%0", "-l", "echo strict-marker"])
        .unwrap();
    tmux.run_ok(["send-keys", "-t", "%0", "Enter"]).unwrap();
    for tool in [
        "list_sessions",
        "list_windows",
        "list_panes",
        "get_server_info",
        "show_environment",
        "show_buffer",
    ] {
        call_strict(&mut s, &schemas, tool, json!({}));
    }
    let v = call_strict(
        &mut s,
        &schemas,
        "list_panes",
        json!({"filters": "{\"pane_id\": \"%0\"}"}),
    );
    assert_eq!(v["panes"].as_array().unwrap().len(), 1, "{v}");
    for (tool, args) in [
        ("get_pane_info", json!({"pane_id": "%0"})),
        ("capture_pane", json!({"pane_id": "%0"})),
        ("capture_since", json!({"pane_id": "%0"})),
        ("snapshot_pane", json!({"pane_id": "%0"})),
        ("get_session_info", json!({"session_id": "$0"})),
        ("get_window_info", json!({"window_id": "@0"})),
        ("display_message", json!({"format": "#{pane_id}"})),
        ("show_option", json!({"name": "history-limit"})),
    ] {
        call_strict(&mut s, &schemas, tool, args);
    }
    let v = call_strict(
        &mut s,
        &schemas,
        "search_panes",
        json!({"pattern": "strict-marker"}),
    );
    assert!(v["total_panes_matched"].as_u64().unwrap() >= 1, "{v}");
    // Nulls inside the batch's operations, and arguments as a string.
    let v = call_strict(
        &mut s,
        &schemas,
        "call_read_tools_batch",
        json!({"operations": [
            {"tool": "list_sessions", "arguments": null},
            {"tool": "get_pane_info", "arguments": "{\"pane_id\": \"%0\", \"socket_name\": null, \"host\": null}"}
        ]}),
    );
    assert_eq!(v["succeeded"], 2, "{v}");
    // Arguments as an object, as clients sent them before, still work.
    let v = s.call_ok(
        "call_read_tools_batch",
        json!({"operations": [{"tool": "get_pane_info", "arguments": {"pane_id": "%0"}}]}),
    );
    assert_eq!(v["succeeded"], 1, "{v}");
    // Without ssh hosts `host` is not listed, and still taken.
    assert!(schemas["get_pane_info"].0["properties"]
        .get("host")
        .is_none());
    s.call_ok("get_pane_info", json!({"pane_id": "%0", "host": "local"}));
    // A required argument sent as null is still refused, naming it.
    let text = s.call_err("get_pane_info", json!({"pane_id": null}));
    assert!(text.contains("pane_id"), "{text}");
    let text = s.call_err(
        "call_read_tools_batch",
        json!({"operations": [{"tool": "list_sessions", "arguments": "[1]"}]}),
    );
    assert!(
        text.contains("operation 0: arguments must be a JSON object"),
        "{text}"
    );
}

#[test]
fn mutating_tools_take_null_for_every_argument_left_out() {
    let tmux = panescan::testing::private_server::PrivateServer::start("strict-mutate", 80, 24)
        .expect("private tmux server starts");
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--tier",
            "mutating",
            "--socket-name",
            tmux.socket_name(),
        ],
        &[],
    );
    s.initialize();
    let schemas = schemas(&mut s);
    call_strict(
        &mut s,
        &schemas,
        "send_keys",
        json!({"pane_id": "%0", "text": "echo typed-strictly"}),
    );
    let v = call_strict(&mut s, &schemas, "split_window", json!({"pane_id": "%0"}));
    assert!(v["pane_id"].as_str().unwrap().starts_with('%'), "{v}");
    call_strict(
        &mut s,
        &schemas,
        "set_option",
        json!({"name": "@strict", "value": "yes"}),
    );
    let shown = tmux.run_ok(["show-options", "-gv", "@strict"]).unwrap();
    assert_eq!(shown.trim(), "yes");
}
