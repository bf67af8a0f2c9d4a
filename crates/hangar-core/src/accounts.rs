//! `[accounts.NAME]`: the provider accounts a session may run under (issue
//! 47 part 2), and the pure rules about them: whether a session may be
//! given an account, what an account adds to its agent's environment, and
//! which other account of the same provider a limited session could carry
//! on under.
//!
//! An account is its credential in the agent's environment, or its CLI's
//! own config folder (`folder`: Claude's `CLAUDE_CONFIG_DIR`, Codex's
//! `CODEX_HOME`), where that CLI keeps its login and its conversations; a
//! session moved between folders has its conversation carried over.
//!
//! An account's credential is a value of its environment: it must never
//! reach a log, a capture, `ls` or an error message. Nothing here prints a
//! value; errors name accounts and variables only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::launch_plan::HANGAR_OWN_VARS;
use crate::model::Provider;

/// One `[accounts.NAME]` table of config.toml.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountConfig {
    /// The provider the account is for (`claude`, `codex`, a
    /// `[providers.NAME]`): only that provider's sessions run under it.
    pub provider: String,
    /// Variables set for an agent that runs under this account: its
    /// credential (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, ...) and anything
    /// else the account needs. The values are never logged nor shown.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The CLI's own config folder for this account, an absolute path:
    /// Claude Code's `CLAUDE_CONFIG_DIR`, Codex's `CODEX_HOME` (a person
    /// logs in once with that variable set). Its conversations are there
    /// too, and hangar reads them there.
    #[serde(default)]
    pub folder: Option<String>,
}

/// Debug without the values: config is logged when it fails to load.
impl std::fmt::Debug for AccountConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountConfig")
            .field("provider", &self.provider)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("folder", &self.folder)
            .finish()
    }
}

/// `[accounts]`: every account by its name.
pub type AccountsConfig = BTreeMap<String, AccountConfig>;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum AccountError {
    #[error("no account {0:?}: add [accounts.{0}] to config.toml, or leave --account out")]
    Unknown(String),
    #[error(
        "account {name:?} is for {account_provider}, not {provider}: give a {provider} account"
    )]
    OtherProvider {
        name: String,
        account_provider: String,
        provider: String,
    },
    #[error(
        "account {name:?} sets {var}, which hangar sets itself: remove it from [accounts.{name}].env"
    )]
    HangarsOwnVar { name: String, var: String },
    #[error(
        "account {name:?} has a folder, but hangar knows no config folder of {provider}: \
         give its credential in [accounts.{name}].env instead"
    )]
    FolderUnknownToProvider { name: String, provider: String },
    #[error("account {name:?}'s folder must be an absolute path, not {folder:?}")]
    FolderNotAbsolute { name: String, folder: String },
    #[error("account {name:?} gives both a folder and {var} in its env: keep one of them")]
    FolderTwice { name: String, var: String },
    #[error(
        "account {name:?} has a config folder of its own, which a sandboxed or container \
         session cannot use (its CLI's state is in its own folder): give the credential in \
         [accounts.{name}].env"
    )]
    FolderInSandbox { name: String },
}

/// The account `name` for a session of `provider`, checked: it exists, it
/// is for that provider, it sets none of hangar's own variables, and its
/// folder is one the provider's CLI has (`folder_var`, the variable naming
/// its config folder, from its adapter).
pub fn account_for<'a>(
    accounts: &'a AccountsConfig,
    name: &str,
    provider: &Provider,
    folder_var: Option<&str>,
) -> Result<&'a AccountConfig, AccountError> {
    let account = accounts
        .get(name)
        .ok_or_else(|| AccountError::Unknown(name.to_owned()))?;
    if Provider::from_name(&account.provider) != *provider {
        return Err(AccountError::OtherProvider {
            name: name.to_owned(),
            account_provider: account.provider.clone(),
            provider: provider.name().to_owned(),
        });
    }
    if let Some(var) = account
        .env
        .keys()
        .find(|k| HANGAR_OWN_VARS.contains(&k.as_str()))
    {
        return Err(AccountError::HangarsOwnVar {
            name: name.to_owned(),
            var: var.clone(),
        });
    }
    if let Some(folder) = &account.folder {
        let Some(var) = folder_var else {
            return Err(AccountError::FolderUnknownToProvider {
                name: name.to_owned(),
                provider: provider.name().to_owned(),
            });
        };
        if !folder.starts_with('/') {
            return Err(AccountError::FolderNotAbsolute {
                name: name.to_owned(),
                folder: folder.clone(),
            });
        }
        if account.env.contains_key(var) {
            return Err(AccountError::FolderTwice {
                name: name.to_owned(),
                var: var.to_owned(),
            });
        }
    }
    Ok(account)
}

/// What the account adds to its agent's environment, in name order (after
/// the provider adapter's variables, so the account's win): its `env`, and
/// its folder as `folder_var`.
pub fn account_env(account: &AccountConfig, folder_var: Option<&str>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = account
        .env
        .iter()
        .filter(|(k, _)| !HANGAR_OWN_VARS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let (Some(folder), Some(var)) = (&account.folder, folder_var) {
        env.push((var.to_owned(), folder.clone()));
        env.sort();
    }
    env
}

/// The config folder the account's CLI runs with, where its conversations
/// are: its `folder`, or the `folder_var` its `env` sets; `None` when it
/// uses the one the daemon's environment names.
pub fn account_folder<'a>(account: &'a AccountConfig, folder_var: Option<&str>) -> Option<&'a str> {
    account
        .folder
        .as_deref()
        .or_else(|| account.env.get(folder_var?).map(String::as_str))
        .filter(|f| !f.is_empty())
}

/// The account a session under `current` (of `provider`) could carry on
/// under while `current` is limited: the first other account of the same
/// provider, by name, that `usable` says may be used now (rule 13 holds
/// for each account). `None` when there is none.
pub fn failover_account(
    accounts: &AccountsConfig,
    current: &str,
    provider: &Provider,
    usable: impl Fn(&str) -> bool,
) -> Option<String> {
    accounts
        .iter()
        .filter(|(name, a)| {
            name.as_str() != current && Provider::from_name(&a.provider) == *provider
        })
        .map(|(name, _)| name)
        .find(|name| usable(name))
        .cloned()
}

/// The usage of the sessions run under one `[accounts.NAME]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedAccountUsage {
    pub name: String,
    pub provider: String,
    pub sessions: u64,
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The priced sessions' cost at list prices.
    pub cost_usd: f64,
    /// Sessions whose cost is unknown (a model with no price), left out of
    /// `cost_usd`.
    pub unpriced_sessions: u64,
}

/// One stretch of a session's life under one account: from a move (or its
/// start) to the next move (or now). Times in milliseconds since the epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountStretch {
    /// `None`: the provider's own login.
    pub account: Option<String>,
    /// `None`: since the session began.
    pub from_ms: Option<u64>,
    /// `None`: up to now.
    pub until_ms: Option<u64>,
}

/// The stretches of `meta`'s life under each account, oldest first, read
/// from the moves its resume ledger recorded (`IdChange::account_move`).
/// One stretch, its account now, for a session never moved. A move older
/// than the ledger's bounded history is not known: the stretch before the
/// oldest recorded move is that move's `from`.
pub fn account_stretches(meta: &crate::model::SessionMeta) -> Vec<AccountStretch> {
    let mut stretches = Vec::new();
    let mut from_ms = None;
    for change in &meta.provider_id_history {
        let Some(moved) = change.account_move.as_deref() else {
            continue;
        };
        stretches.push(AccountStretch {
            account: moved.from.clone(),
            from_ms,
            until_ms: Some(change.at_ms),
        });
        from_ms = Some(change.at_ms);
    }
    stretches.push(AccountStretch {
        account: meta.account.clone(),
        from_ms,
        until_ms: None,
    });
    stretches
}

/// Usage summed per account: each stretch of a session's usage (`usage`)
/// goes to the account it ran under (`None`, the provider's own login, is
/// not summed here); a session counts once per account it ran under. In
/// account name order.
pub fn usage_per_account(
    stretches: &[(crate::usage::SessionUsage, Option<String>)],
) -> Vec<NamedAccountUsage> {
    let mut by_name: BTreeMap<String, NamedAccountUsage> = BTreeMap::new();
    let mut counted: std::collections::BTreeSet<(String, String)> = Default::default();
    for (s, account) in stretches {
        let Some(name) = account.clone() else {
            continue;
        };
        let a = by_name
            .entry(name.clone())
            .or_insert_with(|| NamedAccountUsage {
                name: name.clone(),
                provider: s.provider.clone(),
                ..Default::default()
            });
        if counted.insert((name, s.id.clone())) {
            a.sessions += 1;
        }
        a.requests += s.requests;
        a.input_tokens += s.input_tokens;
        a.output_tokens += s.output_tokens;
        match s.cost_usd {
            Some(c) => a.cost_usd += c,
            None => a.unpriced_sessions += 1,
        }
    }
    by_name.into_values().collect()
}

/// Whether a session may be moved to another account now: never mid-turn,
/// never while it waits for a person, never while a person types into it.
pub fn may_move_now(busy: bool, waiting: bool, person_typing: bool) -> bool {
    !(busy || waiting || person_typing)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Claude Code's adapter names as its config folder's variable.
    const CLAUDE_DIR: Option<&str> = Some("CLAUDE_CONFIG_DIR");

    #[test]
    fn an_account_by_folder_runs_its_cli_with_that_folder_and_is_read_there() {
        let a: AccountsConfig = serde_json::from_value(serde_json::json!({
            "work": {"provider": "claude", "folder": "/home/p/.claude-work"},
            "keyed": {"provider": "claude", "env": {"CLAUDE_CONFIG_DIR": "/home/p/.claude-k"}},
            "both": {"provider": "claude", "folder": "/a",
                     "env": {"CLAUDE_CONFIG_DIR": "/b"}},
            "relative": {"provider": "claude", "folder": ".claude-work"},
            "odd": {"provider": "aider", "folder": "/home/p/.aider"},
        }))
        .unwrap();
        let work = account_for(&a, "work", &Provider::Claude, CLAUDE_DIR).unwrap();
        assert_eq!(
            account_env(work, CLAUDE_DIR),
            [(
                "CLAUDE_CONFIG_DIR".to_owned(),
                "/home/p/.claude-work".to_owned()
            )]
        );
        assert_eq!(
            account_folder(work, CLAUDE_DIR),
            Some("/home/p/.claude-work")
        );
        let keyed = account_for(&a, "keyed", &Provider::Claude, CLAUDE_DIR).unwrap();
        assert_eq!(account_folder(keyed, CLAUDE_DIR), Some("/home/p/.claude-k"));
        assert!(matches!(
            account_for(&a, "both", &Provider::Claude, CLAUDE_DIR),
            Err(AccountError::FolderTwice { .. })
        ));
        assert!(matches!(
            account_for(&a, "relative", &Provider::Claude, CLAUDE_DIR),
            Err(AccountError::FolderNotAbsolute { .. })
        ));
        let aider = Provider::from_name("aider");
        let odd = account_for(&a, "odd", &aider, None).unwrap_err();
        assert!(
            odd.to_string().contains("no config folder of aider"),
            "{odd}"
        );
    }

    fn accounts() -> AccountsConfig {
        // As config.toml's [accounts.NAME] tables read.
        serde_json::from_value(serde_json::json!({
            "work": {"provider": "claude", "env": {"ANTHROPIC_API_KEY": "sk-work"}},
            "home": {"provider": "claude", "env": {"ANTHROPIC_API_KEY": "sk-home"}},
            "openai": {"provider": "codex", "env": {"OPENAI_API_KEY": "sk-openai"}},
            "bad": {"provider": "claude", "env": {"HANGAR_HOME": "/elsewhere"}},
        }))
        .unwrap()
    }

    #[test]
    fn a_session_runs_only_under_an_account_of_its_own_provider() {
        let a = accounts();
        assert!(account_for(&a, "work", &Provider::Claude, CLAUDE_DIR).is_ok());
        assert_eq!(
            account_for(&a, "nope", &Provider::Claude, CLAUDE_DIR).unwrap_err(),
            AccountError::Unknown("nope".into())
        );
        let other = account_for(&a, "openai", &Provider::Claude, CLAUDE_DIR).unwrap_err();
        assert!(matches!(other, AccountError::OtherProvider { .. }));
        assert!(other.to_string().contains("is for codex, not claude"));
        let own = account_for(&a, "bad", &Provider::Claude, CLAUDE_DIR).unwrap_err();
        assert!(own.to_string().contains("HANGAR_HOME"), "{own}");
    }

    #[test]
    fn an_accounts_credential_is_in_its_agents_environment_and_never_in_its_words() {
        let a = accounts();
        let work = account_for(&a, "work", &Provider::Claude, CLAUDE_DIR).unwrap();
        assert_eq!(
            account_env(work, CLAUDE_DIR),
            [("ANTHROPIC_API_KEY".to_owned(), "sk-work".to_owned())]
        );
        assert!(!format!("{work:?}").contains("sk-work"));
        let errors = [
            account_for(&a, "openai", &Provider::Claude, CLAUDE_DIR).unwrap_err(),
            account_for(&a, "bad", &Provider::Claude, CLAUDE_DIR).unwrap_err(),
        ];
        for e in errors {
            assert!(!e.to_string().contains("sk-"), "{e}");
        }
    }

    #[test]
    fn a_limited_session_carries_on_under_another_usable_account_of_its_provider() {
        let a = accounts();
        // home is the other claude account; bad is one too, by name first.
        let usable = |name: &str| name != "bad";
        assert_eq!(
            failover_account(&a, "work", &Provider::Claude, usable),
            Some("home".into())
        );
        let none_usable = |_: &str| false;
        assert_eq!(
            failover_account(&a, "work", &Provider::Claude, none_usable),
            None
        );
        assert_eq!(
            failover_account(&a, "openai", &Provider::Codex, |_| true),
            None,
            "no other codex account"
        );
    }

    #[test]
    fn usage_is_summed_per_account_and_a_session_on_its_own_login_is_not_counted() {
        let session = |id: &str, requests: u64, cost: Option<f64>| crate::usage::SessionUsage {
            id: id.into(),
            title: String::new(),
            provider: "claude".into(),
            models: vec![],
            requests,
            input_tokens: requests * 10,
            output_tokens: requests,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: cost,
            priced: cost.is_some(),
            cost_from: vec![],
            agent_cost_usd: None,
        };
        let sessions = [
            session("a", 2, Some(0.5)),
            session("b", 3, None),
            session("c", 1, Some(0.25)),
            session("own", 9, Some(9.0)),
        ];
        let account_of = |id: &str| match id {
            "a" | "b" => Some("work".to_owned()),
            "c" => Some("home".to_owned()),
            _ => None,
        };
        let stretches: Vec<_> = sessions
            .iter()
            .map(|s| (s.clone(), account_of(&s.id)))
            .collect();
        let per = usage_per_account(&stretches);
        let names: Vec<&str> = per.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["home", "work"]);
        let work = &per[1];
        assert_eq!(
            (work.sessions, work.requests, work.input_tokens),
            (2, 5, 50)
        );
        assert_eq!((work.cost_usd, work.unpriced_sessions), (0.5, 1));
    }

    #[test]
    fn a_moved_sessions_usage_is_split_at_its_moves_and_it_counts_once_per_account() {
        let mut meta = crate::model::SessionMeta::new("s".into(), Provider::Claude, "/w");
        assert_eq!(
            account_stretches(&meta),
            [AccountStretch {
                account: None,
                from_ms: None,
                until_ms: None
            }]
        );
        meta.account = Some("work".into());
        meta.provider_session = Some(crate::model::ProviderSessionId::new(
            "c1",
            crate::model::IdSource::Transcript,
        ));
        crate::ledger::move_to_account(&mut meta, Some("home".into()), None, 100);
        crate::ledger::move_to_account(&mut meta, Some("work".into()), None, 200);
        let stretches = account_stretches(&meta);
        let seen: Vec<(Option<&str>, Option<u64>, Option<u64>)> = stretches
            .iter()
            .map(|s| (s.account.as_deref(), s.from_ms, s.until_ms))
            .collect();
        assert_eq!(
            seen,
            [
                (Some("work"), None, Some(100)),
                (Some("home"), Some(100), Some(200)),
                (Some("work"), Some(200), None),
            ]
        );
        let usage = |requests: u64| crate::usage::SessionUsage {
            id: "s".into(),
            title: String::new(),
            provider: "claude".into(),
            models: vec![],
            requests,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: Some(0.0),
            priced: true,
            cost_from: vec![],
            agent_cost_usd: None,
        };
        let per = usage_per_account(&[
            (usage(3), Some("work".into())),
            (usage(4), Some("home".into())),
            (usage(5), Some("work".into())),
        ]);
        let by: Vec<(&str, u64, u64)> = per
            .iter()
            .map(|a| (a.name.as_str(), a.sessions, a.requests))
            .collect();
        assert_eq!(by, [("home", 1, 4), ("work", 1, 8)]);
    }

    #[test]
    fn a_session_is_never_moved_mid_turn_waiting_or_while_a_person_types() {
        assert!(may_move_now(false, false, false));
        assert!(!may_move_now(true, false, false));
        assert!(!may_move_now(false, true, false));
        assert!(!may_move_now(false, false, true));
    }
}
