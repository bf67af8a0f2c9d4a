//! `hangar engine image build NAME [--provider P]`: an image made from
//! Debian packages with `mmdebstrap` (no registry needed), the provider's
//! agent CLI installed from npm inside it, imported into the engine through
//! its API. hangar never pulls an image; a registry image is the person's
//! own `docker pull`/`podman pull` and `image = "..."` (README).

use std::path::Path;

use super::EngineError;
use super::config::EngineConfig;
use super::docker;

/// The Debian release the images are made from.
const SUITE: &str = "bookworm";

/// The npm package of each agent CLI (the packages REAL_CLIS.md names).
fn npm_package(provider: &str) -> Option<&'static str> {
    hangar_providers::adapter(&hangar_core::Provider::from_name(provider)).npm_package()
}

/// The image a build makes: the engine's `image` when set (so the engine's
/// sessions run what was built), else `localhost/hangar-NAME-PROVIDER`.
fn image_name(engine: &str, cfg: &EngineConfig, provider: &str) -> String {
    cfg.image
        .clone()
        .unwrap_or_else(|| format!("localhost/hangar-{engine}-{provider}"))
}

/// `repo` and `tag` of an image reference (`latest` when it has none).
fn repo_and_tag(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (image, "latest"),
    }
}

/// The mmdebstrap command line for `provider`, writing `out`.
fn mmdebstrap_args(provider: &str, out: &Path) -> Result<Vec<String>, EngineError> {
    let mut args = vec!["--variant=essential".to_owned(), "--quiet".to_owned()];
    match provider {
        "shell" => {}
        p => {
            let package = npm_package(p).ok_or_else(|| {
                EngineError(format!(
                    "no agent CLI package is known for provider {p:?}: use claude, codex, opencode or shell"
                ))
            })?;
            args.push("--include=nodejs,npm,ca-certificates".to_owned());
            args.push(format!(
                "--customize-hook=chroot \"$1\" npm install --global --no-fund --no-audit {package}"
            ));
        }
    }
    args.push(SUITE.to_owned());
    args.push(out.display().to_string());
    Ok(args)
}

pub async fn build(
    home: &Path,
    engine: &str,
    cfg: &EngineConfig,
    provider: Option<&str>,
) -> Result<hangar_protocol::reply::ImageBuilt, EngineError> {
    let provider = provider.unwrap_or("shell");
    let image = image_name(engine, cfg, provider);
    // Connect first: no minute of mmdebstrap for an engine that is not there.
    let client = docker::connect(engine, cfg)?;
    let dir = home.join("engines");
    std::fs::create_dir_all(&dir)
        .map_err(|e| EngineError(format!("cannot create {}: {e}", dir.display())))?;
    let out = dir.join(format!("rootfs-{}.tar", uuid::Uuid::new_v4()));
    let args = mmdebstrap_args(provider, &out)?;
    let ran = tokio::process::Command::new("mmdebstrap")
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .await;
    let result = async {
        let ran = ran.map_err(|e| {
            EngineError(if e.kind() == std::io::ErrorKind::NotFound {
                "mmdebstrap is not installed (Debian package `mmdebstrap`: apt-get install mmdebstrap)".to_owned()
            } else {
                format!("cannot run mmdebstrap: {e}")
            })
        })?;
        if !ran.status.success() {
            let stderr = String::from_utf8_lossy(&ran.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            return Err(EngineError(format!(
                "mmdebstrap failed ({}): {}",
                ran.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            )));
        }
        let tarball = tokio::fs::read(&out)
            .await
            .map_err(|e| EngineError(format!("cannot read {}: {e}", out.display())))?;
        let (repo, tag) = repo_and_tag(&image);
        let id = docker::import(&client, tarball.into(), repo, tag)
            .await
            .map_err(|e| EngineError(format!("engine {engine}: {e}")))?;
        Ok(hangar_protocol::reply::ImageBuilt {
            engine: engine.to_owned(),
            image: image.clone(),
            provider: provider.to_owned(),
            id,
        })
    }
    .await;
    if let Err(e) = std::fs::remove_file(&out)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {e}", out.display());
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split_into_repo_and_tag() {
        assert_eq!(repo_and_tag("local/a"), ("local/a", "latest"));
        assert_eq!(repo_and_tag("local/a:v2"), ("local/a", "v2"));
        assert_eq!(
            repo_and_tag("registry:5000/a"),
            ("registry:5000/a", "latest")
        );
    }

    #[test]
    fn an_agent_image_installs_its_cli_from_npm_and_a_shell_image_nothing() {
        let out = Path::new("/tmp/x.tar");
        let shell = mmdebstrap_args("shell", out).unwrap();
        assert!(!shell.iter().any(|a| a.contains("npm")));
        assert_eq!(shell.last().unwrap(), "/tmp/x.tar");
        let claude = mmdebstrap_args("claude", out).unwrap();
        assert!(claude.iter().any(|a| {
            a.ends_with("npm install --global --no-fund --no-audit @anthropic-ai/claude-code")
        }));
        assert!(mmdebstrap_args("mystery", out).is_err());
    }
}
