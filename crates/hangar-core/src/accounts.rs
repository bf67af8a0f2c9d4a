//! `[accounts.NAME]`: the provider accounts a session may run under (issue
//! 47 part 2), and the pure rules about them: whether a session may be
//! given an account, what an account adds to its agent's environment, and
//! which other account of the same provider a limited session could carry
//! on under.
//!
//! An account's credential is a value of its environment: it must never
//! reach a log, a capture, `ls` or an error message. Nothing here prints a
//! value; errors name accounts and variables only.

use std::collections::BTreeMap;

use serde::Deserialize;
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
}

/// Debug without the values: config is logged when it fails to load.
impl std::fmt::Debug for AccountConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountConfig")
            .field("provider", &self.provider)
            .field("env", &self.env.keys().collect::<Vec<_>>())
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
}

/// The account `name` for a session of `provider`, checked: it exists, it
/// is for that provider, and it sets none of hangar's own variables.
pub fn account_for<'a>(
    accounts: &'a AccountsConfig,
    name: &str,
    provider: &Provider,
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
    Ok(account)
}

/// What the account adds to its agent's environment, in name order (after
/// the provider adapter's variables, so the account's win).
pub fn account_env(account: &AccountConfig) -> Vec<(String, String)> {
    account
        .env
        .iter()
        .filter(|(k, _)| !HANGAR_OWN_VARS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
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

/// Whether a session may be moved to another account now: never mid-turn,
/// never while it waits for a person, never while a person types into it.
pub fn may_move_now(busy: bool, waiting: bool, person_typing: bool) -> bool {
    !(busy || waiting || person_typing)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(account_for(&a, "work", &Provider::Claude).is_ok());
        assert_eq!(
            account_for(&a, "nope", &Provider::Claude).unwrap_err(),
            AccountError::Unknown("nope".into())
        );
        let other = account_for(&a, "openai", &Provider::Claude).unwrap_err();
        assert!(matches!(other, AccountError::OtherProvider { .. }));
        assert!(other.to_string().contains("is for codex, not claude"));
        let own = account_for(&a, "bad", &Provider::Claude).unwrap_err();
        assert!(own.to_string().contains("HANGAR_HOME"), "{own}");
    }

    #[test]
    fn an_accounts_credential_is_in_its_agents_environment_and_never_in_its_words() {
        let a = accounts();
        let work = account_for(&a, "work", &Provider::Claude).unwrap();
        assert_eq!(
            account_env(work),
            [("ANTHROPIC_API_KEY".to_owned(), "sk-work".to_owned())]
        );
        assert!(!format!("{work:?}").contains("sk-work"));
        let errors = [
            account_for(&a, "openai", &Provider::Claude).unwrap_err(),
            account_for(&a, "bad", &Provider::Claude).unwrap_err(),
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
    fn a_session_is_never_moved_mid_turn_waiting_or_while_a_person_types() {
        assert!(may_move_now(false, false, false));
        assert!(!may_move_now(true, false, false));
        assert!(!may_move_now(false, true, false));
        assert!(!may_move_now(false, false, true));
    }
}
