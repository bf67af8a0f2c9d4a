//! A test MCP client (rmcp's own) that drives `hangar mcp --session ID` over
//! stdio exactly as an agent's MCP client would, with the token from the MCP
//! config file hangar wrote for that session.

use std::path::PathBuf;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::{DEADLINE, Hangar};

/// An rmcp client connected to `hangar mcp` for one session.
pub struct Mcp {
    pub rt: tokio::runtime::Runtime,
    pub client: Option<RunningService<RoleClient, ()>>,
}

/// The MCP config hangar wrote for `session` (what the agent receives).
pub fn mcp_config(h: &Hangar, session: &str) -> (PathBuf, Value) {
    let path = h.home.join("mcp").join(format!("{session}.json"));
    h.wait_until(
        &format!("the MCP config of {session} exists"),
        DEADLINE,
        || path.exists(),
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    (path, v)
}

pub fn token_of(h: &Hangar, session: &str) -> String {
    let (_, v) = mcp_config(h, session);
    v["mcpServers"]["hangar"]["env"]["HANGAR_MCP_TOKEN"]
        .as_str()
        .expect("the config carries a token")
        .to_owned()
}

impl Mcp {
    /// Start `hangar mcp --session ID` with the session's token.
    pub fn launch(h: &Hangar, session: &str) -> Mcp {
        Mcp::launch_with_token(h, session, &token_of(h, session))
    }

    pub fn launch_with_token(h: &Hangar, session: &str, token: &str) -> Mcp {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut cmd = h.command(&["mcp", "--session", session]);
        cmd.env("HANGAR_MCP_TOKEN", token);
        let client = rt.block_on(async {
            let transport = TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap();
            ().serve(transport).await.expect("MCP handshake")
        });
        Mcp {
            rt,
            client: Some(client),
        }
    }

    pub fn tools(&self) -> Vec<String> {
        let client = self.client.as_ref().unwrap();
        self.rt
            .block_on(client.list_all_tools())
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Call a tool; `Ok(structured)` or `Err((code, text))`.
    pub fn call(&self, name: &'static str, args: Value) -> Result<Value, (String, String)> {
        let client = self.client.as_ref().unwrap();
        let params = CallToolRequestParams::new(name)
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let r = self
            .rt
            .block_on(client.call_tool(params))
            .unwrap_or_else(|e| panic!("{name} failed at the protocol level: {e}"));
        let structured = r.structured_content.clone().unwrap_or(Value::Null);
        if r.is_error == Some(true) {
            let text = r
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone())
                .unwrap_or_default();
            let code = structured["error"]["code"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            assert!(text.starts_with(&code), "error text names its code: {text}");
            return Err((code, text));
        }
        Ok(structured)
    }

    pub fn ok(&self, name: &'static str, args: Value) -> Value {
        self.call(name, args.clone())
            .unwrap_or_else(|e| panic!("{name}({args}) failed: {e:?}"))
    }

    pub fn refused(&self, name: &'static str, args: Value) -> String {
        match self.call(name, args.clone()) {
            Ok(v) => panic!("{name}({args}) should have been refused, got {v}"),
            Err((code, _)) => code,
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.rt.block_on(client.cancel());
        }
    }
}

/// One tool call's outcome: the structured reply, or `(code, text)`.
pub type CallResult = Result<Value, (String, String)>;

impl Mcp {
    /// Sends every call at once on this one connection and waits for all
    /// the answers, in the order given.
    pub fn call_all(&self, calls: Vec<(&'static str, Value)>) -> Vec<CallResult> {
        let peer = self.client.as_ref().expect("connected").peer().clone();
        self.rt.block_on(async move {
            let tasks: Vec<_> = calls
                .into_iter()
                .map(|(name, args)| {
                    let peer = peer.clone();
                    tokio::spawn(async move {
                        let params = CallToolRequestParams::new(name)
                            .with_arguments(args.as_object().cloned().unwrap_or_default());
                        match peer.call_tool(params).await {
                            Err(e) => Err(("protocol".to_owned(), e.to_string())),
                            Ok(r) if r.is_error == Some(true) => {
                                let structured =
                                    r.structured_content.clone().unwrap_or(Value::Null);
                                let text = r
                                    .content
                                    .first()
                                    .and_then(|c| c.as_text())
                                    .map(|t| t.text.clone())
                                    .unwrap_or_default();
                                let code = structured["error"]["code"]
                                    .as_str()
                                    .unwrap_or("")
                                    .to_owned();
                                Err((code, text))
                            }
                            Ok(r) => Ok(r.structured_content.unwrap_or(Value::Null)),
                        }
                    })
                })
                .collect();
            let mut out = Vec::new();
            for t in tasks {
                out.push(
                    t.await
                        .unwrap_or_else(|e| Err(("panic".to_owned(), e.to_string()))),
                );
            }
            out
        })
    }
}
