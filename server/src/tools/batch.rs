//! call_read_tools_batch: several read tools in one round trip.
//!
//! The allow-list is the registry's batchable tools (read tier, prompt
//! answers: not wait_for_text, not the batch itself). A tool outside it
//! rejects the whole batch before anything runs. With `on_error: continue`
//! the operations run at once (each is an independent read); with `stop`
//! they run in order and stop at the first failure. Rows stay in order
//! either way, and while the whole response would pass the ceiling the
//! largest result is dropped and marked.

use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::context::{ServerArgs, ToolContext, ToolError};
use crate::mcp::registry::{Annotations, Tool};

/// Room for the JSON-RPC envelope around the result (id, content wrapper,
/// `_meta`), counted generously.
const ENVELOPE_BYTES: usize = 1024;
pub const MAX_OPERATIONS: usize = 16;

/// What to do when an operation fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
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
    /// Its arguments.
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
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
pub struct BatchRow {
    pub index: usize,
    pub tool: String,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tool's structured result; absent on failure or when dropped for size.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_object")]
    pub result: Option<Value>,
    /// The result was dropped to keep the response under 1,000,000 bytes.
    pub result_truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
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
        let n = args.operations.len();
        if n == 0 || n > MAX_OPERATIONS {
            return Err(ToolError::new(format!(
                "operations must hold 1 to {MAX_OPERATIONS} operations (got {n})"
            )));
        }
        let allowed = ctx.registry.batchable_names();
        if let Some((i, op)) = args
            .operations
            .iter()
            .enumerate()
            .find(|(_, op)| !allowed.contains(&op.tool.as_str()))
        {
            return Err(ToolError::new(format!(
                "operation {i}: {:?} cannot be batched; nothing was run. Allowed: {}",
                op.tool,
                allowed.join(", ")
            )));
        }
        let ops: Vec<(String, Value)> = args
            .operations
            .iter()
            .map(|op| {
                let mut a = op.arguments.clone().unwrap_or_default();
                // The batch's server is the default for every operation.
                if !a.contains_key("socket_name") && !a.contains_key("socket_path") {
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
                (op.tool.clone(), Value::Object(a))
            })
            .collect();
        // Progress: operations finished out of n.
        let done = AtomicUsize::new(0);
        let run_one = |tool: &str, a: Value| -> Result<Value, String> {
            let r = match ctx.registry.call(&ctx.child(), tool, a) {
                Some(Ok(out)) => Ok(out.structured),
                Some(Err(e)) => Err(e.message),
                None => Err(format!("unknown tool {tool:?}")),
            };
            let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
            ctx.progress
                .report(finished as f64, Some(n as f64), Some(tool));
            r
        };
        let mut outcomes: Vec<Result<Value, String>> = Vec::with_capacity(n);
        let mut stopped_at = None;
        match args.on_error {
            OnError::Continue => {
                outcomes = std::thread::scope(|s| {
                    let handles: Vec<_> = ops
                        .iter()
                        .map(|(tool, a)| s.spawn(|| run_one(tool, a.clone())))
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| {
                            h.join()
                                .unwrap_or_else(|_| Err("internal error in this operation".into()))
                        })
                        .collect()
                });
            }
            OnError::Stop => {
                for (i, (tool, a)) in ops.iter().enumerate() {
                    ctx.check_cancelled()?;
                    let r = run_one(tool, a.clone());
                    let failed = r.is_err();
                    outcomes.push(r);
                    if failed {
                        stopped_at = Some(i);
                        break;
                    }
                }
            }
        }
        ctx.check_cancelled()?;
        let results: Vec<BatchRow> = outcomes
            .into_iter()
            .enumerate()
            .map(|(index, r)| {
                let tool = ops[index].0.clone();
                match r {
                    Ok(v) => BatchRow {
                        index,
                        tool,
                        success: true,
                        error: None,
                        result: Some(v),
                        result_truncated: false,
                    },
                    Err(e) => BatchRow {
                        index,
                        tool,
                        success: false,
                        error: Some(e),
                        result: None,
                        result_truncated: false,
                    },
                }
            })
            .collect();
        let succeeded = results.iter().filter(|r| r.success).count();
        let mut out = BatchResult {
            failed: results.len() - succeeded,
            succeeded,
            results,
            on_error: args.on_error,
            stopped_at,
            truncated: false,
            truncated_bytes: 0,
        };
        fit_response(&mut out, ctx.limits().response_bytes);
        Ok(out)
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
                (Some(v), None) => s.push_str(&format!("[{}] {} {v}\n", r.index, r.tool)),
                (None, None) => s.push_str(&format!(
                    "[{}] {} ok, result dropped for size\n",
                    r.index, r.tool
                )),
            }
        }
        s
    }
}

/// The size of the whole response: structured content plus its text
/// rendering (as a JSON string) plus the envelope.
fn response_size(out: &BatchResult) -> usize {
    let structured = serde_json::to_string(out).map_or(0, |s| s.len());
    let text =
        serde_json::to_string(&Value::String(CallReadToolsBatch::text(out))).map_or(0, |s| s.len());
    structured + text + ENVELOPE_BYTES
}

/// Drops the largest result while the response is over `limit`.
fn fit_response(out: &mut BatchResult, limit: usize) {
    while response_size(out) > limit {
        let largest = out
            .results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                r.result
                    .as_ref()
                    .map(|v| (i, serde_json::to_string(v).map_or(0, |s| s.len())))
            })
            .max_by_key(|(_, size)| *size);
        let Some((i, size)) = largest else { break };
        out.results[i].result = None;
        out.results[i].result_truncated = true;
        out.truncated = true;
        out.truncated_bytes += size as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(i: usize, v: Value) -> BatchRow {
        BatchRow {
            index: i,
            tool: "capture_pane".into(),
            success: true,
            error: None,
            result: Some(v),
            result_truncated: false,
        }
    }

    #[test]
    fn drops_largest_until_it_fits() {
        let big = "x".repeat(300_000);
        let mut out = BatchResult {
            results: vec![
                row(0, json!({"text": big.clone()})),
                row(1, json!({"text": "small"})),
                row(2, json!({"text": big[..200_000].to_owned()})),
            ],
            on_error: OnError::Stop,
            succeeded: 3,
            failed: 0,
            stopped_at: None,
            truncated: false,
            truncated_bytes: 0,
        };
        fit_response(&mut out, 1_000_000);
        assert!(response_size(&out) <= 1_000_000);
        assert!(out.results[0].result_truncated);
        assert!(!out.results[1].result_truncated);
        assert!(out.truncated);
        assert!(out.truncated_bytes >= 300_000);
    }
}
