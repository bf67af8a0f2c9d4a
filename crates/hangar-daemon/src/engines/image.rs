//! `hangar engine image build NAME [--provider P]`: an image made from
//! Debian packages with `mmdebstrap` (no registry needed) and the agent
//! CLIs' npm packages, installed with this machine's npm and copied in,
//! imported into the engine through its API. hangar never pulls an image; a registry image is the person's
//! own `docker pull`/`podman pull` and `image = "..."` (README).

use std::path::Path;

use super::EngineError;
use super::config::EngineConfig;
use super::docker;

/// The Debian release the images are made from.
const SUITE: &str = "bookworm";

/// The npm package of each agent CLI (the packages docs/src/cli-facts.md names).
fn npm_package(provider: &str) -> Option<&'static str> {
    hangar_providers::adapter(&hangar_core::Provider::from_name(provider)).npm_package()
}

/// The image a build makes: the engine's `image` when set (so the engine's
/// sessions run what was built), else `localhost/hangar-NAME-PROVIDER`.
fn image_name(engine: &str, cfg: &EngineConfig, provider: &str) -> String {
    cfg.image.clone().unwrap_or_else(|| {
        let name: String = provider
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        format!("localhost/hangar-{engine}-{name}")
    })
}

/// The npm packages of `providers`: `claude`, `codex@0.171.0` (a version
/// pinned), several separated by commas; none for `shell`.
fn npm_specs(providers: &str) -> Result<Vec<String>, EngineError> {
    let mut out = Vec::new();
    for p in providers
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (name, version) = match p.split_once('@') {
            Some((n, v)) => (n, Some(v)),
            None => (p, None),
        };
        if name == "shell" {
            continue;
        }
        let package = npm_package(name).ok_or_else(|| {
            EngineError(format!(
                "no agent CLI package is known for provider {name:?}: use claude, codex, opencode or shell (a version as claude@2.1.197; several as claude,codex)"
            ))
        })?;
        out.push(match version {
            Some(v) => format!("{package}@{v}"),
            None => package.to_owned(),
        });
    }
    Ok(out)
}

/// `repo` and `tag` of an image reference (`latest` when it has none).
fn repo_and_tag(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (image, "latest"),
    }
}

/// Where the agent CLIs' npm packages are inside an image; their programs
/// are linked into `/usr/local/bin`, on the image's `PATH`.
const INSIDE_CLIS: &str = "/opt/hangar-cli";

/// The mmdebstrap command line writing `out`: Debian's `essential` set,
/// plus, when `staged` names the npm prefix the agent CLIs were installed
/// into on this machine, Debian's `nodejs` (codex's `bin/codex.js` is a Node
/// launcher; claude's program is a native binary) and that prefix copied
/// to [`INSIDE_CLIS`], each of its programs linked into `/usr/local/bin`.
fn mmdebstrap_args(staged: Option<&Path>, out: &Path) -> Vec<String> {
    let mut args = vec!["--variant=essential".to_owned(), "--quiet".to_owned()];
    if let Some(prefix) = staged {
        args.push("--include=nodejs,ca-certificates".to_owned());
        args.push(format!(
            "--customize-hook=chroot \"$1\" mkdir -p {INSIDE_CLIS}"
        ));
        args.push(format!(
            "--customize-hook=sync-in {} {INSIDE_CLIS}",
            prefix.display()
        ));
        args.push(format!(
            "--customize-hook=chroot \"$1\" sh -c 'for b in {INSIDE_CLIS}/node_modules/.bin/*; do ln -s \"$b\" /usr/local/bin/; done'"
        ));
    }
    args.push(SUITE.to_owned());
    args.push(out.display().to_string());
    args
}

/// The `npm install` of `packages`, run on this machine in a folder of its
/// own: its npm, its network and the CAs it trusts (a network whose TLS goes
/// through a company's proxy CA refuses a fresh Debian's npm inside a new
/// root with `SELF_SIGNED_CERT_IN_CHAIN`, seen on this project's machines),
/// and its npm cache, so a CLI already fetched here is not fetched again.
/// The folder is the working directory, not `--prefix`: a prefix also moves
/// npm's global config (`PREFIX/etc/npmrc`), where the machine's `cafile`
/// may be (it is on this project's machines).
fn npm_args(packages: &[String]) -> Vec<String> {
    let mut args: Vec<String> = [
        "install",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    args.extend(packages.iter().cloned());
    args
}

/// Install `packages` into `prefix` with this machine's npm.
async fn npm_install(prefix: &Path, packages: &[String]) -> Result<(), EngineError> {
    std::fs::create_dir_all(prefix)
        .map_err(|e| EngineError(format!("cannot create {}: {e}", prefix.display())))?;
    // Its own package.json: npm installs here, not in a folder above.
    let manifest = prefix.join("package.json");
    std::fs::write(&manifest, b"{\"private\": true}\n")
        .map_err(|e| EngineError(format!("cannot write {}: {e}", manifest.display())))?;
    let ran = tokio::process::Command::new("npm")
        .args(npm_args(packages))
        .current_dir(prefix)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| {
            EngineError(if e.kind() == std::io::ErrorKind::NotFound {
                "npm is not installed on this machine; the agent CLIs are installed with it before they are copied into the image (Debian package `npm`: apt-get install npm)".to_owned()
            } else {
                format!("cannot run npm: {e}")
            })
        })?;
    if !ran.status.success() {
        let stderr = String::from_utf8_lossy(&ran.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(EngineError(format!(
            "npm install {} failed ({}): {}",
            packages.join(" "),
            ran.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )));
    }
    Ok(())
}

pub async fn build(
    home: &Path,
    engine: &str,
    cfg: &EngineConfig,
    socket: &str,
    provider: Option<&str>,
) -> Result<hangar_protocol::reply::ImageBuilt, EngineError> {
    let provider = provider.unwrap_or("shell");
    let image = image_name(engine, cfg, provider);
    // Connect first: no minute of mmdebstrap for an engine that is not there.
    let client = docker::connect(engine, cfg, socket)?.docker;
    let dir = home.join("engines");
    hangar_protocol::paths::ensure_private_dir(&dir)
        .map_err(|e| EngineError(format!("cannot create {}: {e}", dir.display())))?;
    let run = uuid::Uuid::new_v4();
    let out = dir.join(format!("rootfs-{run}.tar"));
    let packages = npm_specs(provider)?;
    let staged = dir.join(format!("npm-{run}"));
    let result = async {
        if !packages.is_empty() {
            npm_install(&staged, &packages).await?;
        }
        let args = mmdebstrap_args((!packages.is_empty()).then_some(staged.as_path()), &out);
        let ran = tokio::process::Command::new("mmdebstrap")
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .await;
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
        // Streamed: with the CLIs the root is near a gigabyte.
        let tarball = tokio::fs::File::open(&out)
            .await
            .map_err(|e| EngineError(format!("cannot read {}: {e}", out.display())))?;
        let (repo, tag) = repo_and_tag(&image);
        let id = docker::import(&client, tarball, repo, tag)
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
    if let Err(e) = std::fs::remove_dir_all(&staged)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {e}", staged.display());
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
    fn an_agent_image_gets_the_clis_npm_installed_here_and_a_shell_image_nothing() {
        let out = Path::new("/tmp/x.tar");
        let shell = mmdebstrap_args(None, out);
        assert!(
            !shell
                .iter()
                .any(|a| a.contains("nodejs") || a.contains("hook"))
        );
        assert_eq!(shell.last().unwrap(), "/tmp/x.tar");
        let agent = mmdebstrap_args(Some(Path::new("/h/engines/npm-1")), out);
        let at = |needle: &str| agent.iter().position(|a| a.contains(needle)).unwrap();
        assert!(agent.contains(&"--include=nodejs,ca-certificates".to_owned()));
        assert!(at("mkdir -p /opt/hangar-cli") < at("sync-in /h/engines/npm-1 /opt/hangar-cli"));
        assert!(at("sync-in") < at("ln -s"));
        assert_eq!(agent[agent.len() - 2], "bookworm");

        assert!(npm_specs("mystery").is_err());
        assert_eq!(npm_specs("shell").unwrap(), Vec::<String>::new());
        assert_eq!(
            npm_specs("claude@2.1.197, codex@0.171.0").unwrap(),
            ["@anthropic-ai/claude-code@2.1.197", "@openai/codex@0.171.0"]
        );
        let npm = npm_args(&npm_specs("claude").unwrap());
        assert_eq!(npm.last().unwrap(), "@anthropic-ai/claude-code");
        assert!(!npm.iter().any(|a| a.contains("prefix")));
        let cfg: EngineConfig = toml::from_str("kind = \"podman\"").unwrap();
        assert_eq!(
            image_name("pod", &cfg, "claude@2.1.197,codex"),
            "localhost/hangar-pod-claude-2.1.197-codex"
        );
    }
}
