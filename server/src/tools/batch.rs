//! call_read_tools_batch: several read tools in one round trip.
//!
//! The allow-list is the registry's batchable tools (read tier, prompt
//! answers: not wait_for_text, not the batch itself). A tool outside it
//! rejects the whole batch before anything runs. With `on_error: continue`
//! the operations run at once (each is an independent read); with `stop`
//! they run in order and stop at the first failure. Rows stay in order
//! either way. Each operation's result arrives encoded and is nested as
//! is; while the whole response would pass the ceiling the largest result
//! is dropped and marked ([`Tool::shrink`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::context::{ErrorKind, ServerArgs, ToolContext, ToolError};
use super::json_str_len;
use crate::tools::registry::{Annotations, Tool};

/// Operations one batch may hold: enough to read a workspace in one call, few enough that one call cannot queue unbounded work on tmux.
const MAX_OPERATIONS: usize = 16;

/// What to do when an operation fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub enum OnError {
    #[default]
    Stop,
    Continue,
}

/// One operation of a batch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// A read tool's name.
    pub tool: String,
    /// Its arguments as a JSON object in a string, e.g. "{\"pane_id\": \"%1\"}".
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub arguments: Option<Value>,
}

impl Operation {
    /// The arguments object: sent as a string (what the schema says: an
    /// open object has no strict-mode form, and one closed schema per
    /// batchable tool would repeat every read tool's schema here), or as
    /// the object itself, which clients that always did keep doing.
    fn arguments_object(&self, index: usize) -> Result<Map<String, Value>, ToolError> {
        let bad = || {
            ToolError::invalid(format!(
                "operation {index}: arguments must be a JSON object such as {{\"pane_id\": \"%1\"}} (or that object as a string); nothing was run"
            ))
        };
        match &self.arguments {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(o)) => Ok(o.clone()),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(Map::new()),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(o)) => Ok(o),
                _ => Err(bad()),
            },
            Some(_) => Err(bad()),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct BatchArgs {
    /// Operations {tool, arguments}, run and reported in order.
    #[schemars(length(min = 1, max = 16))]
    pub operations: Vec<Operation>,
    /// stop (default): stop at the first failure; continue: run every operation.
    #[serde(default)]
    pub on_error: OnError,
    /// Default server for operations that name none.
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// A tool's result is always an object (its structuredContent); saying so
/// constrains the field, which a schema of any JSON value would not.
fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

/// One operation's outcome.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct BatchRow {
    pub index: usize,
    pub tool: String,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure `error` is: invalid_argument, not_found,
    /// over_ceiling, timed_out, tmux_unavailable, refused, cancelled or
    /// internal; absent on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub error_kind: Option<ErrorKind>,
    /// The tool's structured result; absent on failure or when dropped for size.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_object")]
    pub result: Option<Box<RawValue>>,
    /// The result was dropped to keep the response under 1,000,000 bytes.
    pub result_truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct BatchResult {
    pub results: Vec<BatchRow>,
    pub on_error: OnError,
    pub succeeded: usize,
    pub failed: usize,
    /// Index of the failed operation that stopped the batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<usize>,
    /// Some results were dropped for size.
    pub truncated: bool,
    pub truncated_bytes: u64,
}

#[derive(Debug)]
/// `call_read_tools_batch`: several read tools in one call, each reported on its own with its error kind.
pub struct CallReadToolsBatch;

impl Tool for CallReadToolsBatch {
    const NAME: &'static str = "call_read_tools_batch";
    const TITLE: &'static str = "Call read tools in a batch";
    const DESCRIPTION: &'static str = "Run 1-16 read tools in one call, e.g. get_pane_info and capture_pane for several panes. Rows come back in order with success/error each; on_error stop (default) or continue. Use to save round trips; a single call is simpler for one tool. wait_for_text is not allowed.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    const BATCHABLE: bool = false;
    const LISTS_BATCHABLE: bool = true;
    type Args = BatchArgs;
    type Output = BatchResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        check_operations(ctx, &args)?;
        let ops = with_batch_server(&args)?;
        let (outcomes, stopped_at) = run_operations(ctx, &ops, args.on_error)?;
        ctx.check_cancelled()?;
        let results: Vec<BatchRow> = outcomes
            .into_iter()
            .zip(&ops)
            .enumerate()
            .map(|(index, (r, (tool, _)))| row(index, tool.clone(), r))
            .collect();
        let succeeded = results.iter().filter(|r| r.success).count();
        Ok(BatchResult {
            failed: results.len() - succeeded,
            succeeded,
            results,
            on_error: args.on_error,
            stopped_at,
            truncated: false,
            truncated_bytes: 0,
        })
    }

    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        drop_largest(out, excess)
    }

    fn text(out: &Self::Output) -> String {
        let mut s = format!(
            "{} succeeded, {} failed{}{}\n",
            out.succeeded,
            out.failed,
            out.stopped_at
                .map_or(String::new(), |i| format!(", stopped at {i}")),
            if out.truncated {
                format!(", {} bytes of results dropped", out.truncated_bytes)
            } else {
                String::new()
            }
        );
        for r in &out.results {
            match (&r.result, &r.error) {
                (_, Some(e)) => s.push_str(&format!("[{}] {} error: {e}\n", r.index, r.tool)),
                (Some(v), None) => s.push_str(&format!("[{}] {} {}\n", r.index, r.tool, v.get())),
                (None, None) => s.push_str(&format!(
                    "[{}] {} ok, result dropped for size\n",
                    r.index, r.tool
                )),
            }
        }
        s
    }
}

/// What one operation gave: its encoded result, or its error.
type Outcome = Result<Box<RawValue>, ToolError>;

/// Refuses a batch that is empty, too long, names a server no operation may
/// reach, or holds a tool outside the allow-list: nothing has run yet.
fn check_operations(ctx: &ToolContext, args: &BatchArgs) -> Result<(), ToolError> {
    let n = args.operations.len();
    if n == 0 || n > MAX_OPERATIONS {
        return Err(ToolError::invalid(format!(
            "operations must hold 1 to {MAX_OPERATIONS} operations (got {n})"
        )));
    }
    ctx.server_spec(&args.server)?;
    let allowed = ctx.registry.batchable_names();
    if let Some((i, op)) = args
        .operations
        .iter()
        .enumerate()
        .find(|(_, op)| !allowed.contains(&op.tool.as_str()))
    {
        return Err(ToolError::invalid(format!(
            "operation {i}: {:?} cannot be batched; nothing was run. Allowed: {}",
            op.tool,
            allowed.join(", ")
        )));
    }
    Ok(())
}

/// Each operation's tool and arguments; the batch's server is the default
/// for every operation that names none.
fn with_batch_server(args: &BatchArgs) -> Result<Vec<(String, Value)>, ToolError> {
    args.operations
        .iter()
        .enumerate()
        .map(|(index, op)| {
            let mut a = op.arguments_object(index)?;
            // A strict caller's `"socket_name": null` names no server.
            let names = |k: &str| a.get(k).is_some_and(|v| !v.is_null());
            if !names("socket_name") && !names("socket_path") {
                if let Some(s) = &args.server.socket_name {
                    a.insert("socket_name".into(), Value::String(s.clone()));
                }
                if let Some(p) = &args.server.socket_path {
                    a.insert(
                        "socket_path".into(),
                        Value::String(p.to_string_lossy().into_owned()),
                    );
                }
            }
            Ok((op.tool.clone(), Value::Object(a)))
        })
        .collect()
}

/// Runs the operations: all at once with `continue`; in order with `stop`,
/// up to the first failure, whose index is returned.
fn run_operations(
    ctx: &ToolContext,
    ops: &[(String, Value)],
    on_error: OnError,
) -> Result<(Vec<Outcome>, Option<usize>), ToolError> {
    let n = ops.len();
    // Progress: operations finished out of n.
    let done = AtomicUsize::new(0);
    let run_one = |tool: &str, a: Value| -> Outcome {
        let r = match ctx.registry.call(&ctx.child(), tool, a) {
            Some(Ok(out)) => out.into_raw_structured(),
            Some(Err(e)) => Err(e),
            None => Err(ToolError::invalid(format!("unknown tool {tool:?}"))),
        };
        let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
        ctx.progress
            .report(finished as f64, Some(n as f64), Some(tool));
        r
    };
    match on_error {
        OnError::Continue => {
            let outcomes = std::thread::scope(|s| {
                let handles: Vec<_> = ops
                    .iter()
                    .map(|(tool, a)| s.spawn(|| run_one(tool, a.clone())))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(ToolError::internal("internal error in this operation"))
                        })
                    })
                    .collect()
            });
            Ok((outcomes, None))
        }
        OnError::Stop => {
            let mut outcomes = Vec::with_capacity(n);
            for (i, (tool, a)) in ops.iter().enumerate() {
                ctx.check_cancelled()?;
                let r = run_one(tool, a.clone());
                let failed = r.is_err();
                outcomes.push(r);
                if failed {
                    return Ok((outcomes, Some(i)));
                }
            }
            Ok((outcomes, None))
        }
    }
}

/// The row of operation `index`.
fn row(index: usize, tool: String, outcome: Outcome) -> BatchRow {
    match outcome {
        Ok(v) => BatchRow {
            index,
            tool,
            success: true,
            error: None,
            error_kind: None,
            result: Some(v),
            result_truncated: false,
        },
        Err(e) => BatchRow {
            index,
            tool,
            success: false,
            error_kind: Some(e.kind),
            error: Some(e.message),
            result: None,
            result_truncated: false,
        },
    }
}

/// Drops the largest results until about `excess` encoded bytes are
/// saved; false when no result is left to drop.
fn drop_largest(out: &mut BatchResult, excess: usize) -> bool {
    let mut saved = 0usize;
    while saved < excess {
        let largest = out
            .results
            .iter_mut()
            .filter(|r| r.result.is_some())
            .max_by_key(|r| r.result.as_ref().map_or(0, |v| v.get().len()));
        let Some(row) = largest else {
            return saved > 0;
        };
        let Some(result) = row.result.take() else {
            return saved > 0;
        };
        row.result_truncated = true;
        let size = result.get().len();
        // It was in the structured result once and, escaped again, in the
        // text rendering.
        saved += size + json_str_len(result.get());
        out.truncated = true;
        out.truncated_bytes += size as u64;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::registry::encode_within;
    use serde_json::value::to_raw_value;

    fn row(i: usize, text: &str) -> BatchRow {
        BatchRow {
            index: i,
            tool: "capture_pane".into(),
            success: true,
            error: None,
            error_kind: None,
            result: Some(to_raw_value(&serde_json::json!({ "text": text })).unwrap()),
            result_truncated: false,
        }
    }

    #[test]
    fn drops_the_largest_until_the_encoded_result_fits() {
        // Quotes take 2 bytes in the structured result and 4 more in the
        // text rendering (the result's JSON, escaped again).
        let big = "\"".repeat(100_000);
        let out = BatchResult {
            results: vec![
                row(0, &big),
                row(1, "small"),
                row(2, &big[..60_000]),
                row(3, &big[..50_000]),
            ],
            on_error: OnError::Stop,
            succeeded: 4,
            failed: 0,
            stopped_at: None,
            truncated: false,
            truncated_bytes: 0,
        };
        let room = 500_000;
        let encoded = encode_within::<CallReadToolsBatch>(out, room).unwrap();
        assert!(encoded.encoded_len() <= room, "{}", encoded.encoded_len());
        let v: Value = serde_json::from_str(encoded.structured.as_str()).unwrap();
        let dropped: Vec<bool> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["result_truncated"] == true)
            .collect();
        assert_eq!(dropped, vec![true, false, true, false]);
        assert_eq!(v["truncated"], true);
        assert!(v["truncated_bytes"].as_u64().unwrap() > 320_000);
        assert_eq!(v["results"][3]["result"]["text"], big[..50_000]);
    }
}
