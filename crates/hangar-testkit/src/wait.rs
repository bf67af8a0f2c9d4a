//! Waits on named conditions with a deadline: a test never sleeps a fixed
//! time, it polls until what it waits for holds, and fails naming it.

use std::time::{Duration, Instant};

/// The default deadline for a named wait: generous, because 2 shared cores
/// may be busy building while the tests run.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Polls `f` until it holds; panics naming `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    wait_for(what, timeout, || f().then_some(()));
}

/// Polls `check` until it yields a value and returns it; panics naming
/// `what` after `timeout`. The pause between looks doubles from 5 ms up to
/// 100 ms: quick when the condition comes at once, light when it is slow.
pub fn wait_for<T>(what: &str, timeout: Duration, check: impl FnMut() -> Option<T>) -> T {
    poll_for(timeout, check)
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting until {what}"))
}

/// Polls `check` until it yields a value, or `None` once `timeout` has
/// passed: for a caller that adds what it knows to the failure (a
/// daemon's log). Paced as `wait_for`.
pub fn poll_for<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_returns_the_value_once_the_condition_holds() {
        let mut looks = 0;
        let v = wait_for("the third look", DEADLINE, || {
            looks += 1;
            (looks == 3).then_some(looks * 10)
        });
        assert_eq!(v, 30);
    }

    #[test]
    #[should_panic(expected = "timed out after 20ms waiting until never")]
    fn a_wait_that_never_holds_fails_naming_what_it_waited_for() {
        wait_until("never", Duration::from_millis(20), || false);
    }
}
