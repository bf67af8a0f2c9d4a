//! Cost budgets (issue 29): `[usage] max_cost_usd_per_day` over the whole
//! fleet's spending since local midnight, and a session's own `--max-cost`
//! over everything it spent. At 80 % the person is told; at 100 % the
//! session finishes its turn, then hibernates with reason `budget`, and its
//! goal stops.
//!
//! Pure. Unpriced usage never counts as zero: a budget over a model with no
//! price is refused when it is set, and an unpriced request under a budget
//! spends it (the budget can no longer be kept).

use crate::usage::{ModelSum, PriceTable};

/// The share of a budget at which the person is told.
pub const WARN_AT: f64 = 0.8;

/// How much of a budget is spent.
#[derive(Clone, Debug, PartialEq)]
pub enum BudgetLevel {
    Under,
    /// 80 % or more.
    Warn {
        spent_usd: f64,
    },
    /// All of it, or a request with no price was made under it.
    Spent {
        why: String,
    },
}

/// A budget's level from the ledger's sums it covers.
pub fn budget_level(sums: &[ModelSum], prices: &PriceTable, max_usd: f64) -> BudgetLevel {
    let mut spent = 0.0;
    for s in sums {
        match crate::usage::sum_cost(s, prices) {
            Some((c, _)) => spent += c,
            None => {
                return BudgetLevel::Spent {
                    why: format!(
                        "model {} has no price, so the budget cannot be kept",
                        s.model.as_deref().unwrap_or("(unknown)")
                    ),
                };
            }
        }
    }
    if spent >= max_usd {
        BudgetLevel::Spent {
            why: format!("spent ${spent:.2} of ${max_usd:.2}"),
        }
    } else if spent >= max_usd * WARN_AT {
        BudgetLevel::Warn { spent_usd: spent }
    } else {
        BudgetLevel::Under
    }
}

/// Why a budget cannot be set.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BudgetError {
    #[error("a budget must be a positive number of USD, not {0}")]
    NotPositive(f64),
    #[error(
        "a budget over model {0} cannot be kept: it has no price (unpriced usage never counts \
         as $0); give it one in config.toml: [usage.prices.\"{0}\"] input = .., output = .., \
         cache_write = .., cache_read = .. (USD per million tokens)"
    )]
    Unpriced(String),
}

/// A budget of `max_usd` over what the ledger saw (`sums`: per session and
/// model): refused when it is not positive or a model that used tokens has
/// no price. A model is priced by hangar's table, or, for a model the table
/// does not know, by the agent's own figure for every request of it
/// (OpenCode's `cost`, as `sum_cost` counts it toward the budget). Refusals
/// (no tokens) and requests of no known model are not looked at.
pub fn check_budget(
    max_usd: f64,
    sums: &[ModelSum],
    prices: &PriceTable,
) -> Result<(), BudgetError> {
    if !max_usd.is_finite() || max_usd <= 0.0 {
        return Err(BudgetError::NotPositive(max_usd));
    }
    let unpriced = sums.iter().find_map(|s| {
        let model = s.model.as_ref()?;
        crate::usage::sum_cost(s, prices)
            .is_none()
            .then(|| model.clone())
    });
    match unpriced {
        Some(m) => Err(BudgetError::Unpriced(m)),
        None => Ok(()),
    }
}

/// The most a spent budget lets the turn the agent is on run before it
/// hibernates the session: the turn spends on, so it is not waited on
/// without end.
pub const TURN_WAIT_MS: u64 = 10 * 60 * 1000;
/// The most a spent budget waits while the agent waits for a person (a
/// permission prompt, a question): the person has this long to see the
/// notice; an answer would start more spending the budget cannot pay.
pub const PERSON_WAIT_MS: u64 = 60 * 1000;

/// What a session whose budget is spent does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetStop {
    /// Let the turn finish (or the person answer); look again.
    Wait,
    /// Hibernate it now.
    Hibernate,
}

/// A spent budget's session, `waited_ms` after the budget was found spent:
/// it hibernates between turns at once, mid-turn after at most
/// [`TURN_WAIT_MS`], and waiting for a person after at most
/// [`PERSON_WAIT_MS`] (an over-budget agent at a permission prompt must
/// not keep its process, and its account's spending open, for ever).
pub fn budget_stop(activity: crate::activity::Activity, waited_ms: u64) -> BudgetStop {
    use crate::activity::Activity;
    let bound = match activity {
        Activity::Working => TURN_WAIT_MS,
        Activity::Waiting => PERSON_WAIT_MS,
        Activity::Idle | Activity::Unknown => 0,
    };
    if waited_ms < bound {
        BudgetStop::Wait
    } else {
        BudgetStop::Hibernate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::{Price, Tokens};

    fn prices() -> PriceTable {
        let mut t = PriceTable::default();
        t.models.insert(
            "m".to_owned(),
            Price {
                input: 1.0,
                output: 10.0,
                cache_write: 0.0,
                cache_read: 0.0,
                date: None,
                source: None,
            },
        );
        t
    }

    fn sum(model: &str, input: u64, output: u64) -> ModelSum {
        ModelSum {
            session: "s".to_owned(),
            provider: "claude".to_owned(),
            model: Some(model.to_owned()),
            requests: 1,
            tokens: Tokens {
                input,
                output,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_spent_budget_hibernates_between_turns_at_once_and_busy_sessions_after_a_bounded_wait() {
        use crate::activity::Activity;
        assert_eq!(budget_stop(Activity::Idle, 0), BudgetStop::Hibernate);
        assert_eq!(budget_stop(Activity::Unknown, 0), BudgetStop::Hibernate);
        assert_eq!(budget_stop(Activity::Working, 0), BudgetStop::Wait);
        assert_eq!(
            budget_stop(Activity::Working, TURN_WAIT_MS - 1),
            BudgetStop::Wait
        );
        assert_eq!(
            budget_stop(Activity::Working, TURN_WAIT_MS),
            BudgetStop::Hibernate
        );
        // Regression: an over-budget agent at a permission prompt waited for
        // ever (issue 44); the person gets a bounded while to see the notice.
        assert_eq!(budget_stop(Activity::Waiting, 0), BudgetStop::Wait);
        assert_eq!(
            budget_stop(Activity::Waiting, PERSON_WAIT_MS),
            BudgetStop::Hibernate
        );
        assert_eq!(
            budget_stop(Activity::Waiting, TURN_WAIT_MS - 1),
            BudgetStop::Hibernate,
            "a person's while is shorter than a turn's"
        );
    }

    #[test]
    fn a_budget_warns_at_eighty_percent_and_is_spent_at_a_hundred() {
        let p = prices();
        // $1 per million in, $10 per million out.
        assert_eq!(
            budget_level(&[sum("m", 500_000, 0)], &p, 1.0),
            BudgetLevel::Under
        );
        assert!(matches!(
            budget_level(&[sum("m", 800_000, 0)], &p, 1.0),
            BudgetLevel::Warn { .. }
        ));
        assert!(matches!(
            budget_level(&[sum("m", 0, 100_000)], &p, 1.0),
            BudgetLevel::Spent { .. }
        ));
    }

    #[test]
    fn an_unpriced_request_spends_the_budget_never_counts_as_zero() {
        let level = budget_level(&[sum("m", 1, 0), sum("mystery", 1, 1)], &prices(), 100.0);
        let BudgetLevel::Spent { why } = level else {
            panic!("spent")
        };
        assert!(why.contains("mystery"), "{why}");
        // A refusal carries no tokens: nothing to price.
        let mut refused = sum("mystery", 0, 0);
        refused.tokens = Tokens::default();
        assert_eq!(budget_level(&[refused], &prices(), 1.0), BudgetLevel::Under);
    }

    #[test]
    fn a_budget_over_an_unpriced_model_is_refused_with_how_to_price_it() {
        let both = [sum("m", 1, 1), sum("mystery", 1, 1)];
        let e = check_budget(5.0, &both, &prices()).unwrap_err();
        assert_eq!(e, BudgetError::Unpriced("mystery".to_owned()));
        assert!(e.to_string().contains("[usage.prices.\"mystery\"]"));
        assert_eq!(check_budget(5.0, &[sum("m", 1, 1)], &prices()), Ok(()));
        // Only refused at the limit: nothing to price.
        assert_eq!(
            check_budget(5.0, &[sum("mystery", 0, 0)], &prices()),
            Ok(())
        );
        assert_eq!(
            check_budget(0.0, &[], &prices()),
            Err(BudgetError::NotPositive(0.0))
        );
        assert!(check_budget(f64::NAN, &[], &prices()).is_err());
    }

    #[test]
    fn a_model_the_agent_prices_itself_can_carry_a_budget_and_one_it_priced_in_part_cannot() {
        // OpenCode priced every request of its model (its own `cost`).
        let mut own = sum("lab-model", 1000, 100);
        own.agent_cost_usd = Some(0.02);
        assert_eq!(check_budget(5.0, &[own.clone()], &prices()), Ok(()));
        // One of its requests it priced at nothing: the model has no price.
        let mut part = own.clone();
        part.agent_unpriced = 1;
        assert_eq!(
            check_budget(5.0, &[own.clone(), part], &prices()),
            Err(BudgetError::Unpriced("lab-model".to_owned()))
        );
        // And it is counted toward the budget with the agent's figure.
        assert!(matches!(
            budget_level(&[own], &prices(), 0.02),
            BudgetLevel::Spent { .. }
        ));
    }
}
