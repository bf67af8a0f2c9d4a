//! A running `hangar-fake-model-api` (crates/fake-model-api): plain HTTP
//! on 127.0.0.1 and HTTPS on 127.0.0.2 (a loopback address that is not in
//! any agent's `NO_PROXY`, so it stands in for a remote API in the proxy
//! tests). Its state folder carries `ports.json`, `ca.pem`, the
//! `script.json` it answers by and the `requests.jsonl` it logs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::bins::fake_api_bin;
use crate::wait::{DEADLINE, wait_until};

/// How long [`FakeApi::wait_request`] waits: real CLIs start in seconds,
/// not milliseconds, on a busy 2-core machine.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(120);

pub struct FakeApi {
    pub dir: PathBuf,
    pub http_port: u16,
    pub https_port: u16,
    child: Child,
    /// The API runs until its stdin closes: when this fixture drops, or
    /// when the test process dies without dropping it.
    _stdin: ChildStdin,
}

impl FakeApi {
    /// Starts the API with `dir` as its state folder; returns once it
    /// listens.
    pub fn start(dir: &Path) -> FakeApi {
        fs::create_dir_all(dir).expect("fake API folder");
        let mut child = Command::new(fake_api_bin())
            .arg("--state-dir")
            .arg(dir)
            .args(["--https", "127.0.0.2:0", "--until-stdin-closes"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(
                fs::File::create(dir.join("stderr.log"))
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .spawn()
            .expect("start hangar-fake-model-api");
        let stdin = child.stdin.take().expect("piped stdin");
        let ports = dir.join("ports.json");
        wait_until("the fake model API is listening", DEADLINE, || {
            ports.is_file()
        });
        let p: Value = serde_json::from_slice(&fs::read(&ports).expect("read ports.json"))
            .expect("ports.json is JSON");
        FakeApi {
            dir: dir.to_path_buf(),
            http_port: p["http"].as_u64().expect("http port") as u16,
            https_port: p["https"].as_u64().expect("https port") as u16,
            child,
            _stdin: stdin,
        }
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// `https://127.0.0.2:PORT`.
    pub fn https_url(&self) -> String {
        format!("https://127.0.0.2:{}", self.https_port)
    }

    /// The CA (PEM) the HTTPS side's certificate is signed by.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// Replaces the script (see the fake API's `script.rs`); read at each
    /// request.
    pub fn script(&self, script: Value) {
        let tmp = self.dir.join("script.json.tmp");
        fs::write(&tmp, script.to_string()).expect("write script");
        fs::rename(&tmp, self.dir.join("script.json")).expect("install script");
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        fs::read_to_string(self.dir.join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Requests to one API (`anthropic`, `responses`, `chat`).
    pub fn requests_to(&self, api: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["api"] == api)
            .collect()
    }

    /// Waits until a request satisfies `pred`; returns it.
    pub fn wait_request(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut found = None;
        wait_until(what, REQUEST_DEADLINE, || {
            found = self.requests().into_iter().find(|r| pred(r));
            found.is_some()
        });
        found.expect("found once the wait ends")
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
