//! Folder change notification for the whole daemon: one inotify instance
//! and one task, shared by every session, instead of each session's task
//! looking at its folders on a timer.
//!
//! A [`Changes`] names the folders its owner cares about (a session's
//! transcript folder, Claude Code's `sessions/` records, OpenCode's database
//! folder, `HANGAR_HOME` and its `run/`) and is woken when anything in one
//! of them may have changed: a file created, written, renamed in or out
//! (an atomic rename-over is `IN_MOVED_TO`), deleted, or the folder itself
//! created, deleted or moved. The owner then looks again exactly as it did
//! on a timer; a wake is a hint, never the data.
//!
//! inotify's rules (inotify(7)), and what this module does about each:
//! - A watch is on an inode, not a name: a folder that does not exist yet
//!   cannot be watched. Its deepest existing ancestor is watched instead,
//!   and when an entry with the next name of the path is created or moved
//!   in there, the watch moves one step down (and the owner is woken, since
//!   files may already be in the new folder).
//! - A watched folder that is deleted or moved away reports
//!   `IN_DELETE_SELF`/`IN_MOVE_SELF`, then `IN_IGNORED` (its watch is gone):
//!   the path is resolved again, which falls back to an ancestor, so a
//!   deleted and re-created folder is seen again.
//! - Two paths to one inode share one watch descriptor.
//! - When the kernel's queue overflows (`IN_Q_OVERFLOW`, watch descriptor
//!   -1) events were lost: every owner is woken to look once, and every
//!   path is resolved again.
//! - When inotify itself is unavailable (`max_user_instances` or
//!   `max_user_watches` reached), the affected owner falls back to the
//!   interval it passes to [`Changes::changed`]: slower, never blind.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use tokio::sync::Notify;

/// What a watched folder reports: anything that changes its entries or a
/// file's contents, and the folder's own end.
const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR);

/// The folder's watch is gone or no longer names the path.
const GONE: EventMask = EventMask::DELETE_SELF
    .union(EventMask::MOVE_SELF)
    .union(EventMask::IGNORED);

/// The daemon's folder watcher. Started on first use (it needs the
/// runtime); `None` inside when inotify could not be had.
#[derive(Default)]
pub struct FileWatcher {
    shared: OnceLock<Option<Arc<Shared>>>,
}

struct Shared {
    /// Adds and removes watches on the one inotify instance, whose events
    /// the task of [`read_events`] reads.
    watches: Watches,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Every folder some owner wants, and where it is watched now.
    wanted: HashMap<PathBuf, Wanted>,
    /// Watch descriptor -> the path it was added for and the wanted folders
    /// it stands in for.
    by_wd: HashMap<i32, Watched>,
    next_owner: u64,
}

struct Wanted {
    owners: HashMap<u64, Arc<Notify>>,
    /// The watch standing for this folder: its own, or an ancestor's while
    /// it does not exist. `None`: inotify refused (limits); owners poll.
    wd: Option<i32>,
    /// Whether `wd` is the folder's own watch.
    exact: bool,
}

struct Watched {
    /// The handle to remove the watch with.
    wd: WatchDescriptor,
    path: PathBuf,
    wanted: BTreeSet<PathBuf>,
}

impl FileWatcher {
    fn shared(&self) -> Option<Arc<Shared>> {
        self.shared
            .get_or_init(|| match Shared::start() {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(
                        "cannot use inotify ({e}); transcript and home changes are looked for on a timer"
                    );
                    None
                }
            })
            .clone()
    }

    /// A new owner, watching nothing yet.
    pub fn subscribe(&self) -> Changes {
        let shared = self.shared();
        let id = shared.as_ref().map_or(0, |s| {
            let mut st = s.table();
            st.next_owner += 1;
            st.next_owner
        });
        Changes {
            shared,
            id,
            notify: Arc::new(Notify::new()),
            dirs: Vec::new(),
        }
    }
}

/// One owner's folders and its wake-up. Watching a new folder wakes the
/// owner once: whatever changed between its last look and the watch is seen.
pub struct Changes {
    shared: Option<Arc<Shared>>,
    id: u64,
    notify: Arc<Notify>,
    dirs: Vec<PathBuf>,
}

impl Changes {
    /// Watch exactly `dirs` from now on (a no-op when they are the same).
    pub fn watch(&mut self, dirs: Vec<PathBuf>) {
        let dirs: Vec<PathBuf> = dirs.into_iter().map(|d| normal(&d)).collect();
        if dirs == self.dirs {
            return;
        }
        if let Some(shared) = &self.shared {
            let mut st = shared.table();
            for old in self.dirs.iter().filter(|d| !dirs.contains(d)) {
                shared.drop_owner(&mut st, old, self.id);
            }
            for new in dirs.iter().filter(|d| !self.dirs.contains(d)) {
                shared.add_owner(&mut st, new, self.id, &self.notify);
            }
        }
        self.dirs = dirs;
    }

    /// Whether every folder has a watch (else the owner polls).
    fn all_watched(&self) -> bool {
        match &self.shared {
            None => self.dirs.is_empty(),
            Some(s) => {
                let st = s.table();
                self.dirs
                    .iter()
                    .all(|d| st.wanted.get(d).is_some_and(|w| w.wd.is_some()))
            }
        }
    }

    /// Wait until something in the folders may have changed. Only when a
    /// folder could not be watched, `fallback` later regardless.
    pub async fn changed(&self, fallback: Duration) {
        if self.all_watched() {
            self.notify.notified().await;
        } else {
            tokio::select! {
                _ = self.notify.notified() => {}
                _ = tokio::time::sleep(fallback) => {}
            }
        }
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            let mut st = shared.table();
            for d in &self.dirs {
                shared.drop_owner(&mut st, d, self.id);
            }
        }
    }
}

/// `dir` without `.` parts or a trailing slash, so equal folders compare
/// equal. Symlinks are left alone: the kernel follows them on add.
fn normal(dir: &Path) -> PathBuf {
    dir.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

impl Shared {
    fn start() -> std::io::Result<Arc<Shared>> {
        // The event stream registers with the runtime's reactor.
        tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        // Room for many events at once; one event is 16 bytes plus its name.
        let events = Inotify::init()?.into_event_stream(vec![0u8; 64 * 1024])?;
        let shared = Arc::new(Shared {
            watches: events.watches(),
            table: Mutex::new(Table::default()),
        });
        tokio::spawn(read_events(shared.clone(), events));
        Ok(shared)
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Plain maps, consistent between statements: keep going after a panic.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The watch on `path`, and its number (the key of `by_wd`, the same
    /// for two paths to one inode).
    fn add_watch(&self, path: &Path) -> Result<(i32, WatchDescriptor), std::io::Error> {
        let wd = self.watches.clone().add(path, MASK)?;
        Ok((wd.get_watch_descriptor_id(), wd))
    }

    fn add_owner(&self, st: &mut Table, dir: &Path, id: u64, notify: &Arc<Notify>) {
        if !st.wanted.contains_key(dir) {
            st.wanted.insert(
                dir.to_path_buf(),
                Wanted {
                    owners: HashMap::new(),
                    wd: None,
                    exact: false,
                },
            );
            self.resolve(st, dir);
        }
        if let Some(w) = st.wanted.get_mut(dir) {
            w.owners.insert(id, notify.clone());
        }
        // The owner read the folder before it was watched: a change in
        // between would be lost without one more look now.
        notify.notify_one();
    }

    fn drop_owner(&self, st: &mut Table, dir: &Path, id: u64) {
        let Some(w) = st.wanted.get_mut(dir) else {
            return;
        };
        w.owners.remove(&id);
        if w.owners.is_empty() {
            let wd = w.wd;
            st.wanted.remove(dir);
            self.unlink(st, wd, dir);
        }
    }

    /// Forget that `wd` stands for `dir`; remove the watch nobody needs.
    fn unlink(&self, st: &mut Table, wd: Option<i32>, dir: &Path) {
        let Some(wd) = wd else { return };
        let unused = match st.by_wd.get_mut(&wd) {
            Some(w) => {
                w.wanted.remove(dir);
                w.wanted.is_empty()
            }
            None => false,
        };
        if let Some(watched) = unused.then(|| st.by_wd.remove(&wd)).flatten() {
            // A watch the kernel already dropped (its folder is gone) only
            // makes this fail (EINVAL): nothing is left to remove.
            let _ = self.watches.clone().remove(watched.wd);
        }
    }

    /// Watch `dir` itself, or its deepest existing ancestor. Returns whether
    /// the folder's own watch is now in place where it was not before.
    fn resolve(&self, st: &mut Table, dir: &Path) -> bool {
        let Some(previous) = st.wanted.get(dir).map(|w| (w.wd, w.exact)) else {
            return false;
        };
        let mut found = None;
        let mut at = Some(dir);
        while let Some(p) = at {
            match self.add_watch(p) {
                Ok((wd, handle)) => {
                    found = Some((wd, handle, p == dir, p.to_path_buf()));
                    break;
                }
                // Not there (yet), or not a folder: one level up.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
                    at = p.parent().filter(|q| !q.as_os_str().is_empty());
                }
                Err(e) => {
                    tracing::warn!(
                        "cannot watch {} ({e}); it is looked at on a timer",
                        p.display()
                    );
                    break;
                }
            }
        }
        if previous.0 != found.as_ref().map(|f| f.0) {
            self.unlink(st, previous.0, dir);
        }
        let (wd, exact) = match found {
            Some((wd, handle, exact, path)) => {
                st.by_wd
                    .entry(wd)
                    .or_insert_with(|| Watched {
                        wd: handle,
                        path,
                        wanted: BTreeSet::new(),
                    })
                    .wanted
                    .insert(dir.to_path_buf());
                (Some(wd), exact)
            }
            None => (None, false),
        };
        if let Some(w) = st.wanted.get_mut(dir) {
            w.wd = wd;
            w.exact = exact;
        }
        exact && previous != (wd, true)
    }

    fn wake(st: &Table, dir: &Path) {
        if let Some(w) = st.wanted.get(dir) {
            for n in w.owners.values() {
                n.notify_one();
            }
        }
    }

    /// One event from the kernel.
    fn handle(&self, wd: i32, mask: EventMask, name: &OsStr) {
        let mut st = self.table();
        if mask.contains(EventMask::Q_OVERFLOW) {
            tracing::debug!("inotify queue overflowed; every watcher looks again");
            let all: Vec<PathBuf> = st.wanted.keys().cloned().collect();
            for dir in &all {
                self.resolve(&mut st, dir);
                Self::wake(&st, dir);
            }
            return;
        }
        // A CLI's SQLite database (OpenCode's) in WAL mode: every reader,
        // hangar's own reads among them, writes the `-shm` index and may
        // make and unlink an empty `-wal` when it is the only connection.
        // Waking on those would make each read the cause of the next; a
        // writer's commit is a write to the `-wal` (or the database), which
        // still wakes.
        let name_bytes = name.as_encoded_bytes();
        if name_bytes.ends_with(b"-shm")
            || (name_bytes.ends_with(b"-wal") && !mask.contains(EventMask::MODIFY))
        {
            return;
        }
        let Some(watched) = st.by_wd.get(&wd) else {
            // A watch removed since (its IN_IGNORED, or events queued before).
            return;
        };
        let base = watched.path.clone();
        let dirs: Vec<PathBuf> = watched.wanted.iter().cloned().collect();
        if mask.contains(EventMask::IGNORED) {
            st.by_wd.remove(&wd);
            for dir in &dirs {
                if let Some(w) = st.wanted.get_mut(dir) {
                    w.wd = None;
                }
            }
        }
        for dir in &dirs {
            let exact = st.wanted.get(dir).is_some_and(|w| w.exact) && base == *dir;
            if exact {
                if mask.intersects(GONE) {
                    self.resolve(&mut st, dir);
                }
                Self::wake(&st, dir);
                continue;
            }
            // An ancestor stands in: only the next name of the path matters,
            // or the ancestor's own end.
            let next = dir
                .strip_prefix(&base)
                .ok()
                .and_then(|rest| rest.components().next())
                .map(|c| c.as_os_str().to_owned());
            let arrives = mask.intersects(EventMask::CREATE | EventMask::MOVED_TO)
                && next.as_deref() == Some(name);
            if (arrives || mask.intersects(GONE)) && self.resolve(&mut st, dir) {
                Self::wake(&st, dir);
            }
        }
    }
}

/// The watcher's one task: read events as they come, for the daemon's life.
async fn read_events(shared: Arc<Shared>, mut events: inotify::EventStream<Vec<u8>>) {
    loop {
        match events.next().await {
            Some(Ok(ev)) => {
                let name = ev.name.as_deref().unwrap_or(OsStr::new(""));
                shared.handle(ev.wd.get_watch_descriptor_id(), ev.mask, name);
            }
            Some(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Some(Err(e)) => {
                tracing::error!("the inotify watcher stopped: {e}");
                return;
            }
            None => {
                tracing::error!("the inotify watcher stopped: its descriptor was closed");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wake within a generous deadline (the process-level tests' 30 s: the
    /// watcher's task may wait for a core on a loaded machine); a missing
    /// one fails the test.
    async fn woken(c: &Changes) -> bool {
        tokio::time::timeout(
            Duration::from_secs(30),
            c.changed(Duration::from_secs(3600)),
        )
        .await
        .is_ok()
    }

    /// No wake within a short while (nothing happened).
    async fn quiet(c: &Changes) -> bool {
        tokio::time::timeout(
            Duration::from_millis(200),
            c.changed(Duration::from_secs(3600)),
        )
        .await
        .is_err()
    }

    #[tokio::test]
    async fn a_file_written_renamed_over_or_deleted_in_a_watched_folder_wakes_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let w = FileWatcher::default();
        let mut c = w.subscribe();
        c.watch(vec![dir.path().to_path_buf()]);
        assert!(woken(&c).await, "one look once the folder is watched");
        assert!(quiet(&c).await, "nothing happened since");
        std::fs::write(dir.path().join("a.jsonl"), "{}\n").unwrap();
        assert!(woken(&c).await, "a new file");
        while !quiet(&c).await {}
        std::fs::write(dir.path().join("tmp"), "x").unwrap();
        while !quiet(&c).await {}
        std::fs::rename(dir.path().join("tmp"), dir.path().join("a.jsonl")).unwrap();
        assert!(woken(&c).await, "an atomic rename-over");
        while !quiet(&c).await {}
        std::fs::remove_file(dir.path().join("a.jsonl")).unwrap();
        assert!(woken(&c).await, "a deletion");
    }

    #[tokio::test]
    async fn a_folder_that_does_not_exist_yet_is_watched_from_its_ancestor() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("projects").join("-work-x");
        let w = FileWatcher::default();
        let mut c = w.subscribe();
        c.watch(vec![deep.clone()]);
        assert!(woken(&c).await, "one look once the folder is watched");
        std::fs::write(root.path().join("unrelated"), "x").unwrap();
        assert!(quiet(&c).await, "a file beside the path is not a change");
        std::fs::create_dir_all(&deep).unwrap();
        assert!(woken(&c).await, "the folder appeared");
        while !quiet(&c).await {}
        std::fs::write(deep.join("s.jsonl"), "{}\n").unwrap();
        assert!(woken(&c).await, "a file in the new folder");
    }

    #[tokio::test]
    async fn a_deleted_and_re_created_folder_is_watched_again() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let w = FileWatcher::default();
        let mut c = w.subscribe();
        c.watch(vec![home.clone()]);
        assert!(woken(&c).await, "one look once the folder is watched");
        std::fs::remove_dir_all(&home).unwrap();
        assert!(woken(&c).await, "the folder was deleted");
        while !quiet(&c).await {}
        std::fs::create_dir(&home).unwrap();
        assert!(woken(&c).await, "the folder is back");
        while !quiet(&c).await {}
        std::fs::write(home.join("state.db"), "x").unwrap();
        assert!(woken(&c).await, "a file in the re-created folder");
    }

    #[tokio::test]
    async fn owners_share_a_folder_and_a_dropped_owner_removes_nothing_of_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let w = FileWatcher::default();
        let mut a = w.subscribe();
        let mut b = w.subscribe();
        a.watch(vec![dir.path().to_path_buf()]);
        b.watch(vec![dir.path().to_path_buf()]);
        drop(a);
        assert!(woken(&b).await, "one look once the folder is watched");
        std::fs::write(dir.path().join("f"), "x").unwrap();
        assert!(woken(&b).await);
        b.watch(Vec::new());
        let shared = w.shared().unwrap();
        assert!(shared.table().wanted.is_empty() && shared.table().by_wd.is_empty());
    }

    #[tokio::test]
    async fn an_overflowed_queue_wakes_every_owner() {
        let dir = tempfile::tempdir().unwrap();
        let w = FileWatcher::default();
        let mut c = w.subscribe();
        c.watch(vec![dir.path().to_path_buf()]);
        assert!(woken(&c).await, "one look once the folder is watched");
        w.shared()
            .unwrap()
            .handle(-1, EventMask::Q_OVERFLOW, OsStr::new(""));
        assert!(woken(&c).await);
    }
}
