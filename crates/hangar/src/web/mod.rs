//! `hangar web`: the web and phone view (issue 21).
//!
//! A client of the daemon's socket like the TUI: it serves one page (built
//! into the binary, no CDN) and an API under `/api/` whose JSON is the CLI's,
//! and bridges a browser's terminal to the daemon's attach protocol over a
//! WebSocket. It starts the daemon when none runs, as every command does.
//!
//! Other hosts' agents (`far`) are listed and opened through this
//! process's ssh link to each `[hosts.NAME]`, as `hangar --host` reaches
//! them: nothing listens on the other machine.
//!
//! It never puts the pairing token on a command line or in a log: the token
//! is made in this process and printed once, in the URL on stdout.

mod api;
mod app;
mod assets;
mod attach_ws;
mod auth;
mod far;
mod keys;
mod listener;
mod review;

use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use hangar_protocol::paths::Paths;

use crate::conn::Target;

pub use auth::Access;

/// What `hangar web` was asked for.
#[derive(Debug, Clone, Default)]
pub struct WebOptions {
    pub listen: Option<String>,
    pub read_only: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub insecure_lan: bool,
    pub revoke: bool,
}

pub fn run(target: &Target, json: bool, opts: WebOptions) -> anyhow::Result<ExitCode> {
    let paths = &target.paths;
    // The server speaks to the local daemon's socket; serving another
    // machine's agents from here would put its shells on this machine's
    // network. Run it there and tunnel to it instead.
    if let Some(host) = &target.host {
        bail!(
            "`hangar web` serves this machine's daemon only: run `hangar web` on host {:?} \
             and reach it with an SSH tunnel (ssh -L 8080:127.0.0.1:PORT ...; see README)",
            host.name
        );
    }
    if opts.revoke {
        auth::Revocation::new(&paths.home)
            .renew()
            .context("cannot write the web revocation file")?;
        if json {
            println!("{}", serde_json::json!({"revoked": true}));
        } else {
            println!(
                "revoked every paired browser and pairing URL; run `hangar web` again to pair anew"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let listen = parse_listen(opts.listen.as_deref())?;
    let tls = match (&opts.tls_cert, &opts.tls_key) {
        (Some(cert), Some(key)) => Some(listener::tls_config(cert, key)?),
        (None, None) => None,
        _ => bail!("--tls-cert and --tls-key go together"),
    };
    if !listen.ip().is_loopback() && tls.is_none() && !opts.insecure_lan {
        bail!(
            "refusing to serve plain HTTP on {listen}: anyone on that network could read the \
             pairing token and drive your shells. Give --tls-cert and --tls-key, reach it \
             through an SSH tunnel or Tailscale (see README), or pass --insecure-lan to accept \
             the risk"
        );
    }
    // Start the daemon now (as any command does), so a browser never has to.
    target.connect()?;
    let access = if opts.read_only {
        Access::ReadOnly
    } else {
        Access::Full
    };
    let gate = auth::Gate::new(&paths.home, access).context("cannot set up web pairing")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(serve(
        paths.clone(),
        json,
        listen,
        tls,
        gate,
        opts.insecure_lan,
    ))
}

async fn serve(
    paths: Paths,
    json: bool,
    listen: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    gate: auth::Gate,
    insecure_lan: bool,
) -> anyhow::Result<ExitCode> {
    let tcp = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let local = tcp.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let listener = listener::WebListener::start(tcp, tls)?;
    let host = url_host(local);
    let base = format!("{scheme}://{host}:{}", local.port());
    let url = format!("{base}/?token={}", gate.pairing_token().expose());
    let read_only = gate.access() == Access::ReadOnly;
    {
        let mut out = std::io::stdout().lock();
        if json {
            let v = serde_json::json!({"url": url, "listen": local.to_string(), "read_only": read_only});
            writeln!(out, "{v}")?;
        } else {
            writeln!(out, "web: {url}")?;
            if std::io::stdout().is_terminal()
                && let Ok(code) = qrcode::QrCode::new(url.as_bytes())
            {
                use qrcode::render::unicode::Dense1x2;
                // Light modules drawn as blocks: on the usual dark terminal
                // the code then reads dark-on-light, as phone cameras expect.
                let qr = code
                    .render::<Dense1x2>()
                    .dark_color(Dense1x2::Light)
                    .light_color(Dense1x2::Dark)
                    .quiet_zone(true)
                    .build();
                writeln!(out, "{qr}")?;
            }
        }
        out.flush()?;
    }
    let mode = if read_only { " (read-only)" } else { "" };
    eprintln!("hangar web: serving {base}{mode}; Ctrl-C stops it");
    if insecure_lan && !local.ip().is_loopback() && scheme == "http" {
        eprintln!(
            "hangar web: WARNING: plain HTTP on {local} (--insecure-lan): anyone who can see \
             this network's traffic can take the session cookie and type into your agents"
        );
    }
    let app = Arc::new(app::App {
        paths,
        gate,
        secure: scheme == "https",
    });
    let router = api::router(app);
    let stop = Arc::new(tokio::sync::Notify::new());
    let stopping = stop.clone();
    let server = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<listener::PeerAddr>(),
    )
    .with_graceful_shutdown(async move { stopping.notified().await });
    let mut server = std::pin::pin!(server.into_future());
    tokio::select! {
        done = &mut server => done.context("the web server stopped")?,
        _ = stop_signal() => {
            stop.notify_one();
            // A paired page keeps its live list and terminal open for ever;
            // waiting for them all would never end on Ctrl-C.
            if let Ok(done) = tokio::time::timeout(SHUTDOWN_GRACE, &mut server).await {
                done.context("the web server stopped")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How long open requests may take to finish after Ctrl-C.
/// The most lines one history page holds (this machine's sessions and a
/// far host's alike): a page is fetched as the view scrolls back, so a
/// phone never loads a session's whole history at once.
const MAX_HISTORY_PAGE: u32 = 1000;

const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term => {},
    }
}

/// `--listen`: `IP:PORT`, `[IPv6]:PORT`, `IP` (a free port), `HOST:PORT`.
/// Default: 127.0.0.1 on a free port.
fn parse_listen(listen: Option<&str>) -> anyhow::Result<SocketAddr> {
    let Some(s) = listen.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
    };
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = s.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(SocketAddr::from((ip, 0)));
    }
    s.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| {
            format!("--listen {s:?} is not an address: use IP:PORT (e.g. 127.0.0.1:8080) or an IP")
        })
}

/// The host a person types: the bound address, or for a wildcard bind this
/// machine's first non-loopback address (what a phone on the LAN reaches).
fn url_host(local: SocketAddr) -> String {
    let ip = if local.ip().is_unspecified() {
        lan_address(local.is_ipv6()).unwrap_or(local.ip())
    } else {
        local.ip()
    };
    match ip {
        IpAddr::V6(v6) => format!("[{v6}]"),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// The first up, non-loopback interface address of the family asked for.
fn lan_address(v6: bool) -> Option<IpAddr> {
    use nix::net::if_::InterfaceFlags;
    let list = match nix::ifaddrs::getifaddrs() {
        Ok(list) => list,
        Err(e) => {
            tracing::debug!("cannot list the interface addresses: {e}");
            return None;
        }
    };
    list.filter(|ifa| ifa.flags.contains(InterfaceFlags::IFF_UP))
        .filter_map(|ifa| {
            let addr = ifa.address?;
            if v6 {
                addr.as_sockaddr_in6().map(|a| IpAddr::V6(a.ip()))
            } else {
                addr.as_sockaddr_in().map(|a| IpAddr::V4(a.ip()))
            }
        })
        .find(|ip| !ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_defaults_to_loopback_on_a_free_port_and_takes_the_usual_forms() {
        assert_eq!(parse_listen(None).unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_listen(Some("0.0.0.0:8443")).unwrap().to_string(),
            "0.0.0.0:8443"
        );
        assert_eq!(parse_listen(Some("::1")).unwrap().to_string(), "[::1]:0");
        assert_eq!(
            parse_listen(Some("127.0.0.1")).unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert!(parse_listen(Some("not an address")).is_err());
    }

    #[test]
    fn the_url_host_of_a_loopback_bind_is_that_address() {
        assert_eq!(url_host("127.0.0.1:9".parse().unwrap()), "127.0.0.1");
        assert_eq!(url_host("[::1]:9".parse().unwrap()), "[::1]");
    }
}
