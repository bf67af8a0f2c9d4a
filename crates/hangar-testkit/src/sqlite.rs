//! A torn SQLite page, made on purpose: the b-tree pages one below a
//! table's root, read from the file's bytes, and a page overwritten with
//! bytes no b-tree page starts with (what a torn write leaves).
//!
//! The byte layout is SQLite's file format (sqlite.org/fileformat2.html):
//! the page size is the big-endian u16 at offset 16 of the header (1 means
//! 65536); page 1 starts after the 100-byte header; an interior table page
//! is type 5, with its cell count at 3, the right-most child at 8 and cell
//! pointers from 12; a cell is a child page number (u32) and the child's
//! largest rowid (a varint).

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use rusqlite::Connection;

/// The database's page size, from the header of the file's bytes.
pub fn page_size(bytes: &[u8]) -> usize {
    match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        n => usize::from(n),
    }
}

/// Moves every page of the write-ahead log into the main file, so a page
/// torn there is what the next reader reads.
pub fn checkpoint(path: &Path) {
    Connection::open(path)
        .expect("open the database")
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("checkpoint the write-ahead log");
}

/// The pages one below the root of `table`'s b-tree, with the rowids each
/// holds, as (page number, first rowid, last rowid). Checkpoints first.
pub fn leaves_of(path: &Path, table: &str) -> Vec<(u64, i64, i64)> {
    checkpoint(path);
    let conn = Connection::open(path).expect("open the database");
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .expect("the table's root page");
    let max_rowid: i64 = conn
        .query_row(&format!("SELECT max(rowid) FROM {table}"), [], |r| r.get(0))
        .expect("the table's largest rowid");
    drop(conn);
    let bytes = fs::read(path).expect("read the database");
    let page_size = page_size(&bytes);
    let root = root as usize;
    let page = &bytes[(root - 1) * page_size + if root == 1 { 100 } else { 0 }..];
    assert_eq!(page[0], 5, "the root of {table} is an interior table page");
    let cells = usize::from(u16::from_be_bytes([page[3], page[4]]));
    let page_no = |at: usize| u64::from(u32::from_be_bytes(page[at..at + 4].try_into().unwrap()));
    let varint = |mut at: usize| {
        let mut v: i64 = 0;
        for _ in 0..9 {
            let b = page[at];
            v = (v << 7) | i64::from(b & 0x7f);
            at += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    };
    let mut leaves = Vec::new();
    let mut first = 1;
    for i in 0..cells {
        let at = usize::from(u16::from_be_bytes([page[12 + 2 * i], page[13 + 2 * i]]));
        let last = varint(at + 4);
        leaves.push((page_no(at), first, last));
        first = last + 1;
    }
    leaves.push((page_no(8), first, max_rowid));
    leaves
}

/// Overwrites page `page` (1-based) of the file with bytes no b-tree page
/// starts with (a torn write).
pub fn tear_page(path: &Path, page: u64) {
    let bytes = fs::read(path).expect("read the database");
    let page_size = page_size(&bytes) as u64;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open the database for writing");
    f.seek(SeekFrom::Start((page - 1) * page_size))
        .expect("seek to the page");
    f.write_all(&vec![0xff; page_size as usize])
        .expect("overwrite the page");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leaves_cover_every_row_and_a_torn_leaf_loses_only_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (v TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO t SELECT printf('%0100d', i) FROM n;",
        )
        .unwrap();
        drop(conn);
        let leaves = leaves_of(&path, "t");
        assert!(leaves.len() > 4, "{leaves:?}");
        assert_eq!(leaves[0].1, 1);
        assert_eq!(leaves.last().unwrap().2, 2000);
        for w in leaves.windows(2) {
            assert_eq!(w[0].2 + 1, w[1].1, "{leaves:?}");
        }
        let (torn, first, last) = leaves[leaves.len() / 2];
        tear_page(&path, torn);
        let conn = Connection::open(&path).unwrap();
        let row = |rowid: i64| {
            conn.query_row("SELECT v FROM t WHERE rowid = ?1", [rowid], |r| {
                r.get::<_, String>(0)
            })
        };
        // A row on another leaf is read by a seek through the root; one on
        // the torn leaf is not.
        assert_eq!(row(first - 1).unwrap(), format!("{:0100}", first - 1));
        assert_eq!(row(last + 1).unwrap(), format!("{:0100}", last + 1));
        let torn_read = row(first);
        assert!(
            torn_read.is_err(),
            "reading the torn page fails: {torn_read:?}"
        );
    }
}
