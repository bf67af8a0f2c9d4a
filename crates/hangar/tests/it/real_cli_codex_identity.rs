//! Real-CLI conformance, codex 0.171.0 identity (issue 16 defect 3): a
//! codex a person runs in the same folder, outside hangar (`codex exec`, in
//! their own shell, with the same `CODEX_HOME`), writes a rollout of the
//! same folder while hangar's session runs; hangar's session never adopts
//! it, and its next wake resumes its own thread.
//!
//! Skipped with one line when the CLIs cannot be installed.

use crate::real_cli_support;
use crate::support;

use real_cli_support::{REAL_DEADLINE, RealCli};

/// Every rollout under `$CODEX_HOME/sessions` that holds `text`.
fn rollouts_with(rc: &RealCli, text: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![rc.hangar.codex_home.join("sessions")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read_to_string(&p).is_ok_and(|t| t.contains(text)) {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_codex_run_by_a_person_in_the_same_folder_is_never_adopted() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "codex"]);
    rc.wait_ready(&id);
    rc.ask(&id, "inside one");
    let own = rc.wait_provider_id(&id);

    // The person's own codex, same folder, same CODEX_HOME, no hangar.
    let out = rc
        .outside(&rc.clis.codex, &rc.hangar.work)
        .args(["exec", "--skip-git-repo-check", "outside one"])
        .output()
        .expect("run codex exec");
    assert!(
        out.status.success(),
        "codex exec failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    support::wait_until("the person's rollout is written", REAL_DEADLINE, || {
        rollouts_with(&rc, "outside one")
            .iter()
            .any(|p| !p.display().to_string().contains(&own))
    });

    rc.keeps_its_own_conversation_beside(&id, &own, "responses");
}
