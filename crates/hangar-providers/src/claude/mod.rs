//! What hangar knows about Claude Code: its adapter (`adapter`: command
//! line, hooks, identity proof), its transcripts (`transcript`), the hooks
//! it calls back (`hooks`), the record each process keeps of its
//! conversation (`process_record`), and its own background agents, which
//! refuse a `--resume` (`background`).

pub mod adapter;
pub mod background;
pub mod hooks;
pub mod process_record;
pub mod transcript;
