//! The tool registry: one table is the truth for every tool.
//!
//! A tool is a type implementing [`Tool`] (name, title, description, tier,
//! annotations, typed arguments and output, `run`). [`ToolEntry::of`] turns
//! it into a row of plain data and function pointers; [`crate::tools::all`]
//! lists the rows. `tools/list` (rendered by the protocol front end), the
//! batch tool's allow-list, the README's tool table and the snapshot test
//! all read the same rows, so they cannot drift apart.
//!
//! Adding a tool: write a module in `server/src/tools/` with a unit struct
//! implementing [`Tool`], and add `ToolEntry::of::<ThatStruct>()` to
//! [`crate::tools::all`].

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::schema;
use crate::config::Tier;
use crate::tools::context::{ToolContext, ToolError};

/// MCP tool annotations (hints for clients deciding what needs approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// The tool only reads.
    pub read_only: bool,
    /// The tool may destroy something (a pane, window, session).
    pub destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// tmux is a closed world of the user's own processes: false for every
    /// tool here.
    pub open_world: bool,
}

impl Annotations {
    /// A read tool: looks only, the same call may be repeated freely.
    pub const READ: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// A read tool whose answer depends on time (waits, cursors).
    pub const READ_VOLATILE: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
    /// A tool that changes tmux, and again on each call (typing keys).
    pub const MUTATE: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
    /// A tool that changes tmux, to the same state however often it is called.
    pub const MUTATE_IDEMPOTENT: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// A tool that kills something; killing it again changes nothing.
    pub const DESTROY: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    };
}

/// A tool, described by its types.
pub trait Tool {
    /// The name clients call it by.
    const NAME: &'static str;
    /// A short human-readable name for clients' menus.
    const TITLE: &'static str;
    /// One paragraph: what it does, when to use it, when not.
    const DESCRIPTION: &'static str;
    /// The least tier that lists it.
    const TIER: Tier = Tier::Readonly;
    /// The hints clients read before asking a person's approval.
    const ANNOTATIONS: Annotations = Annotations::READ;
    /// May `call_read_tools_batch` call it? Read tools that return promptly.
    const BATCHABLE: bool = true;
    /// Does its input name other tools (`operations[].tool`)? The registry
    /// then writes the allow-list into the schema as an enum.
    const LISTS_BATCHABLE: bool = false;

    /// The arguments; their schema is the tool's `inputSchema`.
    type Args: DeserializeOwned + JsonSchema;
    /// The result; its schema is the tool's `outputSchema`.
    type Output: Serialize + JsonSchema;

    /// Does the work. An error has a kind and a sentence the caller can act on.
    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError>;

    /// The compact text rendering for clients that read `content` only.
    /// Defaults to the structured result as compact JSON.
    fn text(output: &Self::Output) -> String {
        serde_json::to_string(output).unwrap_or_default()
    }

    /// Makes a result that would not fit its response smaller, where the
    /// tool can cut it, and marks what was cut: `excess` is how many
    /// encoded bytes (structured result plus text rendering, JSON escaping
    /// included) are too many. Returns false when nothing more can be cut;
    /// the call then fails with a message that says to narrow the request.
    /// The registry measures again after each cut, so an estimate will do.
    fn shrink(_output: &mut Self::Output, _excess: usize) -> bool {
        false
    }

    /// Encodes a result in at most `room` bytes; `Err` carries the size
    /// of the last encoding that did not fit (0: none could be made). The
    /// default, [`encode_within`], encodes the whole result after each
    /// [`Tool::shrink`]; a tool with large results may encode each piece
    /// once and count what a cut saves, answering byte for byte as the
    /// default would.
    fn encode(output: Self::Output, room: usize) -> Result<ToolOutput, usize>
    where
        Self: Sized,
    {
        encode_within::<Self>(output, room)
    }
}

/// What a successful call returns, encoded once: the structured result and
/// its text rendering, each as the JSON that goes into the response.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// `structuredContent`: a JSON value.
    pub structured: String,
    /// The text rendering, as a JSON string (quotes and escapes included).
    pub text: String,
}

impl ToolOutput {
    /// The bytes the result takes in a response line.
    pub fn encoded_len(&self) -> usize {
        self.structured.len() + self.text.len()
    }

    /// The structured result as a raw JSON value, for a result that goes
    /// into another one (a batch's); checked on the way, as a raw value is.
    pub fn into_raw_structured(self) -> Result<Box<RawValue>, ToolError> {
        RawValue::from_string(self.structured)
            .map_err(|e| ToolError::internal(format!("a result is not JSON: {e}")))
    }
}

/// Rounds of cutting a result before it is refused (each round encodes it
/// again; a tool's estimate is usually right the first time).
pub const MAX_FIT_ROUNDS: usize = 32;

/// Encodes `output`, cutting it with [`Tool::shrink`] until it takes at
/// most `room` bytes. `Err` carries the size of the last encoding that
/// did not fit (or 0 when it could not be encoded at all).
pub fn encode_within<T: Tool>(output: T::Output, room: usize) -> Result<ToolOutput, usize> {
    fit_in_rounds::<T>(output, room, MAX_FIT_ROUNDS)
}

/// [`encode_within`] with `rounds` rounds of cutting left: for an encoder
/// that did the first rounds its own way.
pub fn fit_in_rounds<T: Tool>(
    mut output: T::Output,
    room: usize,
    rounds: usize,
) -> Result<ToolOutput, usize> {
    let encode = |output: &T::Output| -> Option<ToolOutput> {
        Some(ToolOutput {
            structured: serde_json::to_string(output).ok()?,
            text: serde_json::to_string(&T::text(output)).ok()?,
        })
    };
    for _ in 0..rounds {
        let encoded = encode(&output).ok_or(0usize)?;
        let size = encoded.encoded_len();
        if size <= room {
            return Ok(encoded);
        }
        if !T::shrink(&mut output, size - room) {
            return Err(size);
        }
    }
    Err(encode(&output).map_or(0, |e| e.encoded_len()))
}

/// Calls a tool with JSON arguments.
type CallFn = fn(&ToolContext, Value) -> Result<ToolOutput, ToolError>;

/// One row of the registry.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// [`Tool::NAME`].
    pub name: &'static str,
    /// [`Tool::TITLE`].
    pub title: &'static str,
    /// [`Tool::DESCRIPTION`].
    pub description: &'static str,
    /// [`Tool::TIER`].
    pub tier: Tier,
    /// [`Tool::ANNOTATIONS`].
    pub annotations: Annotations,
    /// [`Tool::BATCHABLE`].
    pub batchable: bool,
    /// [`Tool::LISTS_BATCHABLE`].
    pub lists_batchable: bool,
    /// The schema of [`Tool::Args`], built when `tools/list` is first asked for.
    pub input_schema: fn() -> Value,
    /// The schema of [`Tool::Output`], built when `tools/list` is first asked for.
    pub output_schema: fn() -> Value,
    /// Decodes the arguments and runs the tool.
    pub call: CallFn,
}

impl ToolEntry {
    /// The row for tool type `T`.
    pub fn of<T: Tool>() -> ToolEntry {
        ToolEntry {
            name: T::NAME,
            title: T::TITLE,
            description: T::DESCRIPTION,
            tier: T::TIER,
            annotations: T::ANNOTATIONS,
            batchable: T::BATCHABLE && T::TIER == Tier::Readonly,
            lists_batchable: T::LISTS_BATCHABLE,
            input_schema: input_schema_of::<T>,
            output_schema: schema::output_schema_for::<T::Output>,
            call: call_typed::<T>,
        }
    }
}

fn input_schema_of<T: Tool>() -> Value {
    let mut s = schema::input_schema_for::<T::Args>();
    schema::close_object(&mut s);
    s
}

fn call_typed<T: Tool>(ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args: T::Args = serde_json::from_value(args)
        .map_err(|e| ToolError::invalid(format!("invalid arguments for {}: {e}", T::NAME)))?;
    let output = {
        let _running = crate::tmux::spans::Span::new("tool.run");
        T::run(ctx, args)?
    };
    let _encoding = crate::tmux::spans::Span::new("tool.encode");
    encode::<T>(output, ctx.response_room, ctx.ceilings().response_bytes)
}

/// A tool's result as it goes into its response: encoded in at most
/// `room` bytes, or the error that says why it cannot be (`ceiling`: the
/// whole line's, which the error names).
pub fn encode<T: Tool>(
    output: T::Output,
    room: usize,
    ceiling: usize,
) -> Result<ToolOutput, ToolError> {
    // A result that would not fit its response is cut where the tool can
    // cut it, else refused with a way forward; never sent.
    T::encode(output, room).map_err(|size| {
        if size == 0 {
            return ToolError::internal(format!("{}: cannot encode the result", T::NAME));
        }
        let line = size + ceiling.saturating_sub(room);
        ToolError::over_ceiling(format!(
            "{}: the result would make a {line}-byte response, over the {ceiling}-byte ceiling; narrow the request (filters, a smaller range, max_lines / max_bytes)",
            T::NAME
        ))
    })
}

/// The arguments that name ssh hosts (`serve --ssh`): listed only when
/// the operator configured some.
const SSH_ARGUMENTS: &[&str] = &["host", "hosts"];

/// A registered tool with its schemas computed once.
#[derive(Debug)]
struct Row {
    entry: ToolEntry,
    input_schema: Value,
    allowed_args: Vec<String>,
}

/// The tools available in one tier.
#[derive(Debug)]
pub struct Registry {
    tier: Tier,
    rows: Vec<Row>,
}

impl Registry {
    /// Keeps the entries within `tier`, computing schemas once.
    pub fn new(entries: Vec<ToolEntry>, tier: Tier) -> Registry {
        let entries: Vec<ToolEntry> = entries.into_iter().filter(|e| e.tier <= tier).collect();
        let batchable: Vec<Value> = entries
            .iter()
            .filter(|e| e.batchable)
            .map(|e| Value::String(e.name.into()))
            .collect();
        let rows: Vec<Row> = entries
            .into_iter()
            .map(|entry| {
                let mut input_schema = (entry.input_schema)();
                if entry.lists_batchable {
                    if let Some(tool) = input_schema
                        .pointer_mut("/properties/operations/items/properties/tool")
                        .and_then(Value::as_object_mut)
                    {
                        tool.insert("enum".into(), Value::Array(batchable.clone()));
                    }
                }
                let allowed_args = schema::property_names(&input_schema);
                Row {
                    entry,
                    input_schema,
                    allowed_args,
                }
            })
            .collect();
        Registry { tier, rows }
    }

    /// The registry of every panescan tool in `tier`.
    pub fn for_tier(tier: Tier) -> Registry {
        Registry::new(crate::tools::all(), tier)
    }

    /// The registry `panescan serve` lists for `config`: its tier, and
    /// without the ssh arguments when no `--ssh` host is configured.
    pub fn for_config(config: &crate::config::ServeConfig) -> Registry {
        let registry = Registry::for_tier(config.tier);
        if config.hosts.is_empty() {
            registry.unlisted(SSH_ARGUMENTS)
        } else {
            registry
        }
    }

    /// Takes `names` out of every listed input schema while calls still
    /// accept them: arguments that can hold nothing useful here (`host`
    /// without ssh hosts can only be "local") cost every session bytes in
    /// `tools/list`, and a client that sends one is not refused for it.
    fn unlisted(mut self, names: &[&str]) -> Registry {
        for row in &mut self.rows {
            let Some(obj) = row.input_schema.as_object_mut() else {
                continue;
            };
            if let Some(Value::Object(props)) = obj.get_mut("properties") {
                props.retain(|k, _| !names.contains(&k.as_str()));
            }
            if let Some(Value::Array(required)) = obj.get_mut("required") {
                required.retain(|k| !k.as_str().is_some_and(|k| names.contains(&k)));
            }
        }
        self
    }

    /// The tier this registry lists.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// The tools of this tier, in table order.
    pub fn entries(&self) -> impl Iterator<Item = &ToolEntry> {
        self.rows.iter().map(|r| &r.entry)
    }

    /// A tool of this tier by name; tools of other tiers do not exist here.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.row(name).map(|r| &r.entry)
    }

    fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.entry.name == name)
    }

    /// The input schema of a tool of this tier.
    pub fn input_schema(&self, name: &str) -> Option<&Value> {
        self.row(name).map(|r| &r.input_schema)
    }

    /// The tools of this tier with their input schemas (the batch tool's
    /// allow-list written in), in table order.
    pub fn with_input_schemas(&self) -> impl Iterator<Item = (&ToolEntry, &Value)> {
        self.rows.iter().map(|r| (&r.entry, &r.input_schema))
    }

    /// The names of the tools of this tier, for error messages.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries().map(|e| e.name).collect()
    }

    /// The names `call_read_tools_batch` may call.
    pub fn batchable_names(&self) -> Vec<&'static str> {
        self.entries()
            .filter(|e| e.batchable)
            .map(|e| e.name)
            .collect()
    }

    /// Calls a tool of this tier. Unknown argument names are refused with
    /// the list of valid ones (serde's `deny_unknown_fields` does not work
    /// with the flattened common arguments).
    pub fn call(
        &self,
        ctx: &ToolContext,
        name: &str,
        args: Value,
    ) -> Option<Result<ToolOutput, ToolError>> {
        let row = self.row(name)?;
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        // A strict caller sends every argument, null for those it leaves out.
        schema::drop_absent_nulls(&mut args, &row.input_schema);
        let Value::Object(obj) = &args else {
            return Some(Err(ToolError::invalid(format!(
                "{name}: arguments must be an object"
            ))));
        };
        // Serde names no field for a null it cannot take (the arguments
        // are flattened); a null left here is a required argument's.
        if let Some(k) = obj.iter().find(|(_, v)| v.is_null()).map(|(k, _)| k) {
            if row.allowed_args.contains(k) {
                return Some(Err(ToolError::invalid(format!(
                    "{name}: {k} is required and cannot be null"
                ))));
            }
        }
        let unknown: Vec<&str> = obj
            .keys()
            .filter(|k| !row.allowed_args.iter().any(|a| a == *k))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Some(Err(ToolError::invalid(format!(
                "{name}: unknown argument{} {}; valid arguments: {}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join(", "),
                row.allowed_args.join(", ")
            ))));
        }
        Some((row.entry.call)(ctx, args))
    }

    /// The README's tool table (Markdown), generated from the rows.
    pub fn markdown_table(&self) -> String {
        let mut out = String::from("| tool | tier | what it does |\n|---|---|---|\n");
        for e in self.entries() {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                e.name,
                e.tier,
                first_sentence(e.description).replace('|', "\\|")
            ));
        }
        out
    }
}

/// The first sentence: up to a ". " that starts a capitalised sentence
/// ("e.g. foo" does not end one).
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices(". ") {
        if bytes.get(i + 2).is_some_and(|b| b.is_ascii_uppercase()) {
            return &text[..=i];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::ServeConfig;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema)]
    struct EchoArgs {
        /// How many bytes to return.
        n: usize,
    }

    #[derive(Debug, Serialize, JsonSchema)]
    struct EchoOut {
        text: String,
    }

    #[derive(Debug)]
    struct Echo;

    impl Tool for Echo {
        const NAME: &'static str = "echo";
        const TITLE: &'static str = "Echo";
        const DESCRIPTION: &'static str = "Returns n bytes.";
        type Args = EchoArgs;
        type Output = EchoOut;
        fn run(_: &ToolContext, args: EchoArgs) -> Result<EchoOut, ToolError> {
            Ok(EchoOut {
                text: "x".repeat(args.n),
            })
        }
    }

    #[derive(Debug)]
    struct Kill;

    impl Tool for Kill {
        const NAME: &'static str = "kill";
        const TITLE: &'static str = "Kill";
        const DESCRIPTION: &'static str = "Destroys.";
        const TIER: Tier = Tier::Destructive;
        type Args = EchoArgs;
        type Output = EchoOut;
        fn run(_: &ToolContext, _: EchoArgs) -> Result<EchoOut, ToolError> {
            Ok(EchoOut {
                text: String::new(),
            })
        }
    }

    fn context(registry: Registry, response_bytes: usize) -> (Arc<Registry>, ToolContext) {
        let registry = Arc::new(registry);
        let mut config = ServeConfig::default();
        config.ceilings.response_bytes = response_bytes;
        let ctx = ToolContext::new(Arc::new(config), registry.clone());
        (registry, ctx)
    }

    #[test]
    fn tiers_filter_rows_and_unknown_arguments_name_the_valid_ones() {
        let entries = vec![ToolEntry::of::<Echo>(), ToolEntry::of::<Kill>()];
        let read = Registry::new(entries.clone(), Tier::Readonly);
        assert_eq!(read.names(), vec!["echo"]);
        assert!(read.get("kill").is_none());
        assert_eq!(
            Registry::new(entries, Tier::Destructive).names(),
            vec!["echo", "kill"]
        );
        let (reg, ctx) = context(read, 1_000_000);
        let err = reg
            .call(&ctx, "echo", serde_json::json!({"n": 1, "m": 2}))
            .unwrap()
            .unwrap_err();
        assert!(
            err.message
                .contains("unknown argument m; valid arguments: n"),
            "{err}"
        );
        let err = reg
            .call(&ctx, "echo", serde_json::json!({"n": "x"}))
            .unwrap()
            .unwrap_err();
        assert!(
            err.message.starts_with("invalid arguments for echo"),
            "{err}"
        );
        assert!(reg
            .call(&ctx, "kill", serde_json::json!({"n": 1}))
            .is_none());
    }

    #[test]
    fn results_over_the_response_ceiling_are_refused() {
        let (reg, ctx) = context(
            Registry::new(vec![ToolEntry::of::<Echo>()], Tier::Readonly),
            1000,
        );
        let ok = reg
            .call(&ctx, "echo", serde_json::json!({"n": 100}))
            .unwrap();
        assert!(ok.is_ok());
        let err = reg
            .call(&ctx, "echo", serde_json::json!({"n": 5000}))
            .unwrap()
            .unwrap_err();
        assert!(err.message.contains("over the 1000-byte ceiling"), "{err}");
    }

    #[derive(Debug, Serialize, JsonSchema)]
    struct QuotesOut {
        lines: Vec<String>,
        cut: bool,
    }

    /// Returns n lines of 10 quotes; drops lines from the end to fit.
    #[derive(Debug)]
    struct Quotes;

    impl Tool for Quotes {
        const NAME: &'static str = "quotes";
        const TITLE: &'static str = "Quotes";
        const DESCRIPTION: &'static str = "Returns n lines of quotes.";
        type Args = EchoArgs;
        type Output = QuotesOut;
        fn run(_: &ToolContext, args: EchoArgs) -> Result<QuotesOut, ToolError> {
            Ok(QuotesOut {
                lines: vec!["\"".repeat(10); args.n],
                cut: false,
            })
        }
        fn shrink(out: &mut QuotesOut, excess: usize) -> bool {
            let mut saved = 0;
            while saved < excess {
                let Some(line) = out.lines.pop() else {
                    return saved > 0;
                };
                // Its JSON (and a comma) in the result, and that JSON
                // escaped again in the text.
                let json = serde_json::to_string(&line).unwrap_or_default();
                saved += json.len() + 1 + crate::tools::json_str_len(&json) + 1;
                out.cut = true;
            }
            true
        }
    }

    #[test]
    fn results_are_cut_to_their_encoded_size_in_the_room_the_line_leaves() {
        let (reg, mut ctx) = context(
            Registry::new(vec![ToolEntry::of::<Quotes>()], Tier::Readonly),
            10_000,
        );
        ctx.response_room = 8_000;
        let out = reg
            .call(&ctx, "quotes", serde_json::json!({"n": 1000}))
            .unwrap()
            .unwrap();
        assert!(out.encoded_len() <= 8_000, "{}", out.encoded_len());
        assert!(out.encoded_len() > 8_000 - 100, "{}", out.encoded_len());
        let v: Value = serde_json::from_str(out.structured.as_str()).unwrap();
        assert_eq!(v["cut"], true);
        let text: String = serde_json::from_str(out.text.as_str()).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        let small = reg
            .call(&ctx, "quotes", serde_json::json!({"n": 3}))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(small.structured.as_str()).unwrap();
        assert_eq!(v["cut"], false);
        // A tool that cannot cut is refused, naming the whole line.
        let (reg, mut ctx) = context(
            Registry::new(vec![ToolEntry::of::<Echo>()], Tier::Readonly),
            10_000,
        );
        ctx.response_room = 8_000;
        let err = reg
            .call(&ctx, "echo", serde_json::json!({"n": 9_000}))
            .unwrap()
            .unwrap_err();
        assert!(
            err.message
                .contains("would make a 20028-byte response, over the 10000-byte ceiling"),
            "{err}"
        );
    }

    #[test]
    fn first_sentences_skip_abbreviations() {
        assert_eq!(
            first_sentence("Run it, e.g. this. Then more."),
            "Run it, e.g. this."
        );
        assert_eq!(first_sentence("One sentence"), "One sentence");
    }
}
