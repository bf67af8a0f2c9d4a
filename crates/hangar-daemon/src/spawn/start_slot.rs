//! A restore's start slot: the thing `[restore] concurrency` counts.
//!
//! A restore holds one slot per pane from just before the pane's process is
//! forked until that process has shown its first output, exited, or been
//! stopped after its spawn timeout. That is the boot, when an agent CLI loads,
//! refreshes its login and draws its first screen, and what the bound keeps
//! from happening to the whole fleet at once (DESIGN.md rule 4): never more
//! than `concurrency` processes of a restore are booting at the same time.
//!
//! A process that has printed gives its slot to the next pane at once and
//! settles outside the bound: the daemon watches it for `[restore] settle_ms`
//! to prove it does not exit straight away (a failed login prints, then
//! exits). So the settles of a restore overlap instead of each waiting
//! behind the slots, and a 9-pane restore is live within about one settle.

use tokio::sync::OwnedSemaphorePermit;

/// One pane's hold on a restore slot, or no slot for a wake that is bounded
/// elsewhere (the wake queue) or not at all.
pub struct StartSlot(Option<OwnedSemaphorePermit>);

impl StartSlot {
    /// A wake that holds no restore slot.
    pub fn none() -> StartSlot {
        StartSlot(None)
    }

    /// A restore slot, held until [`StartSlot::release`] or until dropped.
    pub fn held(permit: OwnedSemaphorePermit) -> StartSlot {
        StartSlot(Some(permit))
    }

    /// The process has shown its first output: the next pane may fork.
    pub fn release(&mut self) {
        self.0 = None;
    }
}
