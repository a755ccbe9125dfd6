//! Protocol eras: the `initialize` handshake (2024-11-05 .. 2025-11-25) and
//! the stateless 2026-07-28 surface, where every request carries its
//! protocol version and client capabilities in `_meta`.
//!
//! The era is decided per request, not per connection: a request whose
//! `_meta` names a protocol version is a modern request, anything else is a
//! handshake-era request. That keeps one server answering clients of both
//! eras without state to get out of sync.

use serde_json::{json, Map, Value};

use super::jsonrpc::{RpcError, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION};

/// Versions reachable through `initialize`, oldest first.
const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Versions of the stateless surface.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// `_meta` key under which a stateless request names its protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key under which a stateless request carries the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key under which a stateless answer names this server.
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// How long a client may cache `tools/list` and `server/discover`. The
/// tool set is fixed for the life of the process (the tier is chosen at
/// start), so an hour is safe; private because the tier is per operator.
pub const LIST_TTL_MS: u64 = 3_600_000;

/// Which era a request belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// The `initialize` handshake and the session it opens (2024-11-05 .. 2025-11-25).
    Handshake,
    /// Stateless requests, each naming its own protocol version.
    Modern {
        /// The version the request names (one of [`MODERN_VERSIONS`]).
        version: String,
    },
}

impl Era {
    /// Whether the request is stateless: the answer then carries its version and server info in `_meta`.
    pub fn is_modern(&self) -> bool {
        matches!(self, Era::Modern { .. })
    }
}

/// Every version we speak, for `-32022` data and `server/discover`.
fn all_versions() -> Vec<&'static str> {
    HANDSHAKE_VERSIONS
        .iter()
        .chain(MODERN_VERSIONS)
        .copied()
        .collect()
}

/// Reads the era of a request from `params._meta`, validating the modern
/// envelope (supported version, client capabilities present).
pub fn request_era(params: Option<&Value>) -> Result<Era, RpcError> {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let Some(meta) = meta else {
        return Ok(Era::Handshake);
    };
    let Some(version) = meta.get(META_PROTOCOL_VERSION) else {
        return Ok(Era::Handshake);
    };
    let version = version.as_str().unwrap_or_default();
    if !MODERN_VERSIONS.contains(&version) {
        return Err(RpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version {version:?}; supported: {}",
                all_versions().join(", ")
            ),
        )
        .with_data(json!({"supported": all_versions(), "requested": version})));
    }
    match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(_)) => {}
        _ => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                "a {version} request must carry _meta[\"{META_CLIENT_CAPABILITIES}\"] (an object)"
            ),
            ))
        }
    }
    Ok(Era::Modern {
        version: version.to_owned(),
    })
}

/// Methods that 2026-07-28 removed: a modern request for one of them is an
/// unknown method.
pub fn removed_in_modern(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "notifications/initialized"
            | "resources/subscribe"
            | "resources/unsubscribe"
    )
}

/// The `serverInfo` object of `initialize` and `server/discover`.
pub fn server_info() -> Value {
    json!({
        "name": "panescan",
        "title": "panescan (tmux)",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// Tools and prompts, fixed for the life of the process (no list
/// changes); resources, which change with tmux, with subscriptions and
/// list changes (through `resources/subscribe` before 2026-07-28, through
/// `subscriptions/listen` from it). No `logging`: clients that see it send
/// `logging/setLevel`.
pub fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": false},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": false},
    })
}

/// What `initialize` tells a model about the server before it reads any tool.
/// The same at every tier: it says which tier brings what, and `tools/list`
/// shows only the configured tier's tools.
const INSTRUCTIONS: &str = "tmux for agents: find text in every pane, scrollback included (search_panes; \
since=cursor for what is new; watch_panes to be told), inspect sessions, windows and panes, capture pane text \
(capture_since for what is new), wait for text. The mutating tier adds run_command (exit status and exactly what \
the command printed) and tools that create and arrange sessions, windows and panes; the destructive tier adds kills \
and respawns; tools/list shows the tier this server runs. Ids are tmux's (%pane, @window, $session). Every output \
is bounded and says when it was cut; secrets in pane text come back as [REDACTED:KIND]. Resources: tmux://sessions, \
tmux://pane/N/screen (N of pane %N) and the templates (subscribe to be told when a pane printed).";

/// The answer to `initialize`: the client's version when we speak it,
/// otherwise our newest handshake version (the client then decides).
pub fn initialize_result(params: Option<&Value>) -> Result<Value, RpcError> {
    let params = match params {
        None => &Value::Null,
        Some(p) if p.is_object() => p,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "initialize params must be an object",
            ))
        }
    };
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match requested {
        Some(v) if HANDSHAKE_VERSIONS.contains(&v) => v,
        _ => HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1],
    };
    Ok(json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    }))
}

/// The answer to `server/discover`.
pub fn discover_result() -> Value {
    json!({
        "supportedVersions": all_versions(),
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "private",
    })
}

/// Stamps what the modern era requires on every result: `resultType` and
/// our identity in `_meta`. Handshake-era results stay as they were.
pub fn finish_result(era: &Era, mut result: Value) -> Value {
    if let (Era::Modern { .. }, Value::Object(obj)) = (era, &mut result) {
        obj.entry("resultType")
            .or_insert_with(|| Value::String("complete".into()));
        let meta = obj
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(META_SERVER_INFO.into(), server_info());
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(version: &str, caps: bool) -> Value {
        let mut m = json!({META_PROTOCOL_VERSION: version});
        if caps {
            m[META_CLIENT_CAPABILITIES] = json!({});
        }
        json!({"_meta": m})
    }

    #[test]
    fn era_detection() {
        assert_eq!(request_era(None).unwrap(), Era::Handshake);
        assert_eq!(
            request_era(Some(&json!({"_meta": {"progressToken": 1}}))).unwrap(),
            Era::Handshake
        );
        assert!(request_era(Some(&meta("2026-07-28", true)))
            .unwrap()
            .is_modern());
        let e = request_era(Some(&meta("1999-01-01", true))).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert!(e.data.unwrap()["supported"].is_array());
        assert_eq!(
            request_era(Some(&meta("2026-07-28", false)))
                .unwrap_err()
                .code,
            INVALID_PARAMS
        );
    }

    #[test]
    fn initialize_echoes_supported_versions() {
        for v in HANDSHAKE_VERSIONS {
            let r = initialize_result(Some(&json!({"protocolVersion": v}))).unwrap();
            assert_eq!(r["protocolVersion"], *v);
        }
        let r = initialize_result(Some(&json!({"protocolVersion": "2099-01-01"}))).unwrap();
        assert_eq!(r["protocolVersion"], "2025-11-25");
        assert!(r["capabilities"].get("logging").is_none());
    }
}
