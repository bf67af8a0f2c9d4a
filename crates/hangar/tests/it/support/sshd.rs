//! A real OpenSSH server on loopback for the `--host` tests: Debian's
//! `openssh-server` (`/usr/sbin/sshd`), started by the test on a free port
//! with its own host key, user key, authorized_keys, known_hosts and client
//! config, all in a temp folder; nothing of the machine's own ssh setup is
//! read or changed.
//!
//! Where each part comes from: the server options are sshd_config(5)'s
//! (`StrictModes no` because the temp folder is not root-only, `UsePAM no`
//! because no PAM stack is set up for it); the client side is ssh_config(5)
//! given with `ssh -F`, through an `ssh` wrapper put first on the PATH of
//! the local hangar, which then finds it as it finds a person's own ssh.
//! sshd must be run by its absolute path, and as root it wants its
//! privilege-separation folder `/run/sshd`.
//!
//! The "remote" machine is a second hangar home on this one: its `hangar`
//! is a wrapper script that sets that home's environment (the fake agents,
//! as the local harness does) and runs the real binary.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Hangar, descendants_of, hangar_bin};

pub const SSHD: &str = "/usr/sbin/sshd";

/// Whether the tests can run here; prints the one line saying why not.
pub fn available() -> bool {
    let have = Path::new(SSHD).exists()
        && Command::new("ssh")
            .arg("-V")
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !have {
        hangar_testkit::required::missing(
            "sshd",
            &format!(
                "OpenSSH is not installed ({SSHD} or ssh missing: apt-get install openssh-server openssh-client)"
            ),
        );
    }
    have
}

pub struct Sshd {
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    pub port: u16,
    /// The folder holding the `ssh` wrapper; put it first on PATH.
    pub bin: PathBuf,
    /// A user key the server does not accept.
    pub wrong_key: PathBuf,
    pub user_key: PathBuf,
    pub user: String,
    child: Child,
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "hangar-test", "-f"])
        .arg(path)
        .output()
        .expect("run ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A loopback port nothing listens on (for "unreachable"), reserved for
/// the rest of the test run: a socket bound to it that never listens, so
/// a connection to it is refused and no sshd started meanwhile (on a port
/// the kernel hands out) can take it. A port only found free and released
/// can be handed to an sshd another test starts meanwhile (one run of the
/// `remote_` tests, beside the three-host ones, failed the unreachable
/// host's "Connection refused" check; RELIABILITY.md).
pub fn closed_port() -> u16 {
    use nix::sys::socket::{
        AddressFamily, SockFlag, SockType, SockaddrIn, bind, getsockname, socket,
    };
    static HELD: std::sync::Mutex<Vec<std::os::fd::OwnedFd>> = std::sync::Mutex::new(Vec::new());
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .expect("a TCP socket");
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrIn::new(127, 0, 0, 1, 0),
    )
    .expect("bind a loopback port");
    let port = getsockname::<SockaddrIn>(std::os::fd::AsRawFd::as_raw_fd(&fd))
        .expect("the bound port")
        .port();
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push(fd);
    port
}

fn user_name() -> String {
    // SAFETY: getpwuid returns a pointer into static storage or null.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        assert!(!pw.is_null(), "this user has no passwd entry");
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

impl Sshd {
    /// A server that lets this process's own user in.
    pub fn start() -> Sshd {
        Self::start_allowing(user_name())
    }

    /// A server that lets `user` in (with the user key); for another user
    /// than this process's, the server's folder and authorized_keys are
    /// made readable to all (sshd reads authorized_keys as that user; the
    /// host key stays 0600).
    pub fn start_allowing(user: String) -> Sshd {
        let tmp = tempfile::Builder::new()
            .prefix("hangar-sshd-")
            .tempdir()
            .expect("temp dir");
        let dir = fs::canonicalize(tmp.path()).expect("canonical");
        let host_key = dir.join("host_key");
        let user_key = dir.join("user_key");
        let wrong_key = dir.join("wrong_key");
        for k in [&host_key, &user_key, &wrong_key] {
            keygen(k);
        }
        fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).expect("authorized_keys");
        if user != user_name() {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod dir");
            fs::set_permissions(
                dir.join("authorized_keys"),
                fs::Permissions::from_mode(0o644),
            )
            .expect("chmod authorized_keys");
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        }
        let mut last_log = String::new();
        for _ in 0..5 {
            let port = free_port();
            let config = dir.join("sshd_config");
            fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {dir}/sshd.pid\n\
                     AuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nUsePAM no\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
                     AllowUsers {user}\nPrintMotd no\nPrintLastLog no\nLogLevel VERBOSE\n",
                    hk = host_key.display(),
                    dir = dir.display(),
                ),
            )
            .expect("write sshd_config");
            let log = dir.join("sshd.log");
            let child = Command::new(SSHD)
                .args(["-D", "-f"])
                .arg(&config)
                .arg("-E")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start sshd");
            let mut child = child;
            let deadline = Instant::now() + super::DEADLINE;
            let up = loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break false;
                }
                if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                    // An SSH server speaks first: its version line.
                    let mut banner = [0u8; 4];
                    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
                    if s.read_exact(&mut banner).is_ok() && &banner == b"SSH-" {
                        break true;
                    }
                }
                assert!(Instant::now() < deadline, "sshd never answered");
                std::thread::sleep(Duration::from_millis(20));
            };
            if up {
                let sshd = Sshd {
                    _dir: tmp,
                    dir: dir.clone(),
                    port,
                    bin: dir.join("bin"),
                    wrong_key,
                    user_key,
                    user,
                    child,
                };
                sshd.write_client_side(&host_key);
                return sshd;
            }
            // Another process took the port first: try another one.
            let _ = child.kill();
            let _ = child.wait();
            last_log = fs::read_to_string(&log).unwrap_or_default();
        }
        panic!("sshd would not start: {last_log}");
    }

    /// known_hosts, the client config (with an alias `box-alias`) and the
    /// `ssh` wrapper that hands it to the real ssh.
    fn write_client_side(&self, host_key: &Path) {
        let pubkey = fs::read_to_string(host_key.with_extension("pub")).expect("host key");
        let mut parts = pubkey.split_whitespace();
        let (kind, key) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        fs::write(
            self.dir.join("known_hosts"),
            format!("[127.0.0.1]:{} {kind} {key}\n", self.port),
        )
        .expect("known_hosts");
        fs::write(
            self.dir.join("ssh_config"),
            format!(
                "Host box-alias\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n\
                 Host *\n  UserKnownHostsFile {dir}/known_hosts\n  GlobalKnownHostsFile /dev/null\n\
                 \x20 StrictHostKeyChecking yes\n  IdentitiesOnly yes\n  LogLevel ERROR\n",
                port = self.port,
                user = self.user,
                key = self.user_key.display(),
                dir = self.dir.display(),
            ),
        )
        .expect("ssh_config");
        fs::create_dir_all(&self.bin).expect("bin");
        let ssh = self.bin.join("ssh");
        fs::write(
            &ssh,
            format!(
                "#!/bin/sh\nexec /usr/bin/ssh -F '{}' \"$@\"\n",
                self.dir.join("ssh_config").display()
            ),
        )
        .expect("ssh wrapper");
        fs::set_permissions(&ssh, fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// The PATH for a local hangar that reaches this server: the wrapper
    /// first, then the fixture's own.
    pub fn path_for(&self, h: &Hangar) -> String {
        format!(
            "{}:{}",
            self.bin.display(),
            h.env_var("PATH").unwrap_or_default()
        )
    }

    /// The pids of sshd's per-connection processes.
    pub fn connection_pids(&self) -> Vec<i32> {
        descendants_of(self.child.id() as i32)
    }
}

impl Sshd {
    /// Stop the server as a machine going away would: the listener and
    /// every connection it forked are killed.
    pub fn kill(&mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        // The listener first, then every connection it forked (they outlive
        // it otherwise).
        let children = descendants_of(self.child.id() as i32);
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in children {
            // SAFETY: only processes forked by our own sshd are named.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A user of this machine made for one far host (issue 47: each host's
/// hangar runs as a user of its own, in a home of its own), deleted again
/// when dropped. Only root can make one (`useradd`); `--password '*'`
/// leaves the account usable with a key (sshd without PAM refuses a
/// locked `!` account even for keys).
pub struct HostUser {
    pub name: String,
    pub uid: u32,
}

/// useradd and userdel lock /etc/passwd: one at a time in this process.
static USERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn sbin(program: &str) -> String {
    let full = format!("/usr/sbin/{program}");
    if Path::new(&full).exists() {
        full
    } else {
        program.to_owned()
    }
}

impl HostUser {
    /// Whether this process may make users (it runs as root).
    pub fn possible() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// A new system user with `home` as its home folder (not created).
    pub fn create(home: &Path) -> HostUser {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("hgt-{}-{n}", std::process::id());
        let _one = USERS.lock().unwrap_or_else(|e| e.into_inner());
        let out = Command::new(sbin("useradd"))
            .args([
                "--system",
                "--shell",
                "/bin/sh",
                "--password",
                "*",
                "--home-dir",
            ])
            .arg(home)
            .arg(&name)
            .output()
            .expect("run useradd");
        assert!(
            out.status.success(),
            "useradd {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cname = std::ffi::CString::new(name.clone()).expect("a user name");
        // SAFETY: getpwnam returns a pointer into static storage or null;
        // read at once, under the lock.
        let uid = unsafe {
            let pw = libc::getpwnam(cname.as_ptr());
            assert!(!pw.is_null(), "{name} has no passwd entry after useradd");
            (*pw).pw_uid
        };
        HostUser { name, uid }
    }

    /// Give `path` and everything under it to this user.
    pub fn own(&self, path: &Path) {
        let out = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:", self.name))
            .arg(path)
            .output()
            .expect("run chown");
        assert!(
            out.status.success(),
            "chown failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for HostUser {
    fn drop(&mut self) {
        let _one = USERS.lock().unwrap_or_else(|e| e.into_inner());
        // -f: its processes were ended with its hangar; a straggler must
        // not leave the account behind.
        match Command::new(sbin("userdel"))
            .args(["-f", &self.name])
            .output()
        {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "userdel {} failed: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("cannot run userdel: {e}"),
        }
    }
}

/// A `hangar` for the remote side: `remote`'s environment (its home, the
/// fake agents, its PATH) and then the real binary, as a remote machine's
/// install would be.
pub fn remote_hangar(remote: &Hangar) -> PathBuf {
    let path = remote.root.join("remote-bin").join("hangar");
    fs::create_dir_all(path.parent().expect("parent")).expect("remote bin");
    let mut script = String::from("#!/bin/sh\n");
    // Its HANGAR_HOME comes from the host's `home` setting, as it would on
    // a real machine whose hangar runs under a home of its own.
    for (k, v) in remote.env_vars().iter().filter(|(k, _)| k != "HANGAR_HOME") {
        script.push_str(&format!(
            "export {k}='{}'\n",
            v.to_string_lossy().replace('\'', r"'\''")
        ));
    }
    script.push_str(&format!("cd '{}'\n", remote.work.display()));
    script.push_str(&format!("exec '{}' \"$@\"\n", hangar_bin().display()));
    fs::write(&path, script).expect("remote hangar");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}
