//! hangar's process-level tests, in one test binary.
//!
//! Each module was its own integration test binary (`tests/NAME.rs`), and
//! each linked the whole stack; here they share one build and one link, and
//! libtest runs their tests side by side instead of binary after binary.
//! Every test still brings its own daemon in its own temporary
//! `HANGAR_HOME` (hangar-testkit's `Hangar`), so they stay independent.
//!
//! Run one former file's tests with a filter on its module name:
//! `cargo test -p hangar --test it reliability_crash::` (add a test name
//! after the `::` for one test). tests/README.md says the same.
//!
//! Adding a test file:
//! 1. write it as `tests/it/NAME.rs` (not `tests/NAME.rs`: that would be a
//!    binary of its own again, and would not find the support modules);
//! 2. add `mod NAME;` below, in name order;
//! 3. in the file, take the support modules with `use crate::support;`
//!    (and `use crate::pty_screen;` ...) instead of `mod support;`, then
//!    `use support::...` as before.
//!
//! What a test must not do, now that it shares its process with every
//! other: change the process's environment (`set_var`), working folder,
//! umask or signal dispositions, or open an fd without close-on-exec for
//! longer than it must (a child another test starts meanwhile inherits
//! it). Give the setting to the child's `Command` instead. An insta
//! snapshot of module `NAME` is `snapshots/it__NAME__SNAPSHOT.snap`.

// The support modules (the shared fixtures are in crates/hangar-testkit).
mod faults_support;
mod kube_support;
mod proxy_support;
mod pty_screen;
mod real_cli_more_support;
mod real_cli_support;
mod reliability_support;
mod support;
// `browser_or_skip!` is defined there: declared first, with `macro_use`.
#[macro_use]
mod web_support;

// One module per former test binary.
mod a_cli_newer_than_tested_is_named;
mod activity_notify;
mod activity_sources;
mod activity_wait;
mod agent_code_migration;
mod attach_round_trip;
mod codex_shared_server_ends_with_its_session;
mod engines_kubernetes;
mod engines_podman;
mod export_keeps_last_screens;
mod failed_sessions_and_the_cli_contract;
mod faults_clock;
mod faults_config_reload;
mod faults_disk;
mod faults_flood;
mod faults_home_deleted;
mod faults_mcp_storm;
mod faults_sigstop;
mod faults_two_daemons;
mod finish_survives_a_killed_daemon;
mod fork_sessions;
mod governor_keeps_the_fleet_in_budget;
mod governor_spares_people_and_families;
mod hibernate_lets_the_agent_save_its_conversation;
mod identity_claude_clear_hook;
mod identity_claude_proof;
mod identity_duplicates_on_restore;
mod identity_ledger;
mod identity_shared_folder;
mod identity_transfer;
mod idle_daemon_wakes_for_nothing;
mod ids_tabs_and_placement_commands_behave_as_designed;
mod json_replies;
mod mcp_first_prompt_delivery;
mod mcp_orchestration;
mod opencode_sessions_resume_their_own_conversation;
mod proxy_capture;
mod real_cli_accounts;
mod real_cli_claude;
mod real_cli_claude_hibernate;
mod real_cli_claude_identity;
mod real_cli_codex_identity;
mod real_cli_codex_processes;
mod real_cli_delivery_under_load;
mod real_cli_engines;
mod real_cli_fork;
mod real_cli_goals;
mod real_cli_more_conformance;
mod real_cli_more_copilot;
mod real_cli_more_gemini;
mod real_cli_more_pi;
mod real_cli_more_qwen;
mod real_cli_sandboxed;
mod real_cli_sessions;
mod real_cli_usage;
mod reliability_children;
mod reliability_clients;
mod reliability_crash;
mod reliability_leaks;
mod reliability_permissions;
mod reliability_state;
mod remote_all_hosts_over_ssh;
mod remote_hosts_over_ssh;
mod restore_and_reload_keep_their_bounds;
mod restore_forks_before_the_full_load;
mod restore_overlaps_its_settles;
mod restore_spawns_only_the_visible_panes;
mod review_and_land;
mod sandbox_escapes;
mod search_across_sessions;
mod sessions_run_as_real_processes;
mod spawn_and_close_cycles_leak_nothing;
mod terminal_history;
mod the_control_socket_answers_bad_clients_and_keeps_serving;
mod tui_diff_review;
mod tui_history;
mod tui_keys;
mod tui_mouse;
mod tui_one_engine;
mod tui_screens;
mod untrusted_text;
mod usage_and_limits;
mod web_browser;
mod web_http;
mod web_review;
mod web_scrollback;
mod worktree_isolation;
