//! Which transcript files a session's processes hold open, read from
//! `/proc/<pid>/fd` of the session's process and its descendants.
//!
//! Real codex keeps its rollout file open for the whole session, so the
//! process holding a rollout open is the session that writes it: the one
//! fact that tells two fresh codex sessions in one folder apart. This module
//! only reads `/proc`; what the answer means is `hangar_core::ledger`'s call.
//! It must never follow a pid it was not given into another session's tree,
//! and never fail loudly: a process that vanished simply holds nothing.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Descendants are looked for at most this deep, so a pid cycle read from a
/// racing `/proc` can never loop.
const MAX_DEPTH: usize = 16;

/// `pid` and every process below it.
pub fn process_tree(pid: u32) -> Vec<u32> {
    if pid == 0 {
        return Vec::new();
    }
    let mut tree = vec![pid];
    // Cheap path: the kernel's list of children (CONFIG_PROC_CHILDREN).
    if Path::new(&format!("/proc/{pid}/task/{pid}/children")).exists() {
        let mut frontier = vec![pid];
        for _ in 0..MAX_DEPTH {
            let mut next = Vec::new();
            for p in frontier {
                for child in children_from_task_lists(p) {
                    if !tree.contains(&child) {
                        tree.push(child);
                        next.push(child);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        return tree;
    }
    // Otherwise one pass over /proc for every process's parent.
    let parents: Vec<(u32, u32)> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut frontier = vec![pid];
    for _ in 0..MAX_DEPTH {
        let next: Vec<u32> = parents
            .iter()
            .filter(|(child, parent)| frontier.contains(parent) && !tree.contains(child))
            .map(|(child, _)| *child)
            .collect();
        if next.is_empty() {
            break;
        }
        tree.extend(&next);
        frontier = next;
    }
    tree
}

fn children_from_task_lists(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Field 4 of `/proc/<pid>/stat`, counted after the command name's last `)`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The files under `root` that the process tree of `pid` holds open.
pub fn open_under(pid: u32, root: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    for p in process_tree(pid) {
        let Ok(fds) = fs::read_dir(format!("/proc/{p}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = fs::read_link(fd.path())
                && target.starts_with(root)
            {
                found.insert(target);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_this_process_holds_open_is_found_and_a_closed_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let open = root.join("rollout-open.jsonl");
        let closed = root.join("rollout-closed.jsonl");
        fs::write(&closed, "{}\n").unwrap();
        let _held = fs::File::create(&open).unwrap();
        let found = open_under(std::process::id(), &root);
        assert!(found.contains(&open), "{found:?}");
        assert!(!found.contains(&closed));
        assert!(open_under(std::process::id(), &root.join("elsewhere")).is_empty());
    }

    #[test]
    fn the_tree_of_a_process_includes_its_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        let pid = child.id();
        let _ = child.kill();
        let _ = child.wait();
        assert!(tree.contains(&pid), "{tree:?} lacks {pid}");
        assert!(process_tree(0).is_empty());
    }
}
