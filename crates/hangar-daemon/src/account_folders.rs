//! The config folder a session's CLI runs with under its `[accounts.NAME]`
//! (issue 47), and carrying its conversation into that folder when it
//! changes: a move to another account, or the account's `folder` edited in
//! config.toml. The CLI resumes only what its own folder holds, so a
//! conversation is carried before the session runs there, never after.

use std::path::PathBuf;

use hangar_core::SessionMeta;
use hangar_core::accounts::{self, AccountError, AccountsConfig};
use hangar_providers::transcript::discovery;

/// The folder `meta`'s CLI runs with under account `account` (`None`: the
/// provider's own login): the account's config folder, or `None` for the
/// one the daemon's environment names. Checked as a start checks it.
pub fn folder_under(
    accounts: &AccountsConfig,
    account: Option<&str>,
    meta: &SessionMeta,
) -> Result<Option<String>, AccountError> {
    let Some(name) = account else {
        return Ok(None);
    };
    let var = hangar_providers::config_folder_var(&meta.provider);
    let config = accounts::account_for(accounts, name, &meta.provider, var)?;
    let folder = accounts::account_folder(config, var).map(str::to_owned);
    if folder.is_some() && (meta.sandbox.is_some() || meta.engine.is_some()) {
        return Err(AccountError::FolderInSandbox {
            name: name.to_owned(),
        });
    }
    Ok(folder)
}

/// Carry `meta`'s conversation from the folder it ran with to `to`
/// (`None`: the daemon's folder), so its CLI resumes it there. Nothing to
/// do for a session with no conversation yet, or whose folder stays.
pub fn carry_to(meta: &SessionMeta, to: Option<&str>) -> Result<(), String> {
    if meta.sandbox.is_some() || meta.state_folder.as_deref() == to {
        return Ok(());
    }
    let Some(psid) = meta.durable_provider_id() else {
        return Ok(());
    };
    let Some(from_root) = discovery::session_transcript_root(meta, &discovery::env_var) else {
        return Ok(());
    };
    let to_root = match to {
        Some(folder) => PathBuf::from(folder),
        None => match discovery::transcript_root(&meta.provider, &discovery::env_var) {
            Some(root) => root,
            None => return Ok(()),
        },
    };
    hangar_providers::transcript::carry::carry_conversation(
        &meta.provider,
        &from_root,
        &to_root,
        &meta.cwd,
        psid,
    )
    .map(|_| ())
    .map_err(|e| {
        format!(
            "cannot carry conversation {psid} from {} to {}: {e}",
            from_root.display(),
            to_root.display()
        )
    })
}
