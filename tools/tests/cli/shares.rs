//! Comparing two sampled shares without rerunning: how far apart sampling
//! noise alone puts them, from the numbers of samples, for a stated rate of
//! false failures.
//!
//! A profile's share of a function is the fraction of n samples that fell
//! in it: binomial, with standard error sqrt(p(1-p)/n). Two profiles of one
//! workload (two tools sampling one run, or one tool each on two runs of a
//! deterministic workload) estimate one share p; their difference has
//! standard error sqrt(p(1-p)(1/n1 + 1/n2)), p estimated by pooling both
//! profiles' samples (the two-proportion test: a share one tool saw 0 times
//! still has the other's evidence, where each profile's own estimate would
//! call it certain). A timer at a fixed period samples more evenly than
//! independent draws, so the binomial error is an upper bound, except for a
//! timer in phase with the workload's loop (`debian_profiles.rs` keeps the
//! two tools' periods incommensurate for that).

use crate::ensure;
use crate::harness::{LiveTest, TestResult, test};

/// The two-sided normal quantile of 1e-4: a comparison of two shares of
/// one workload fails by sampling noise alone once in 10 000.
pub(crate) const Z: f64 = 3.8906;

/// One share compared: `ours` % of `n_ours` samples against `theirs` % of
/// `n_theirs`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shares {
    pub(crate) ours: f64,
    pub(crate) n_ours: usize,
    pub(crate) theirs: f64,
    pub(crate) n_theirs: usize,
}

impl Shares {
    /// [`Z`] standard errors of the difference, in points, under the
    /// hypothesis that both estimate one share (pooled).
    pub(crate) fn noise(&self) -> f64 {
        let (n1, n2) = (self.n_ours as f64, self.n_theirs as f64);
        if n1 == 0.0 || n2 == 0.0 {
            return 100.0;
        }
        let p = (self.ours * n1 + self.theirs * n2) / (100.0 * (n1 + n2));
        let p = p.clamp(0.0, 1.0);
        100.0 * Z * (p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)).sqrt()
    }

    /// `|ours - theirs| <= noise + systematic`, every figure in the text
    /// either way: (agrees, `ours % of n, theirs % of n, |d| <= bound`).
    pub(crate) fn within(&self, systematic: f64) -> (bool, String) {
        let bound = self.noise() + systematic;
        let d = (self.ours - self.theirs).abs();
        (
            d <= bound,
            format!(
                "{:.2} % of {} vs {:.2} % of {}: |d| {d:.2} {} {bound:.2} ({:.2} noise + {systematic:.2} systematic)",
                self.ours,
                self.n_ours,
                self.theirs,
                self.n_theirs,
                if d <= bound { "<=" } else { ">" },
                self.noise(),
            ),
        )
    }

    /// The one-sided form, `ours` not below `theirs` by more than the
    /// bound (an `ours` above is never a failure): (holds, text). With the
    /// same [`Z`] its false-failure rate is half the two-sided one's.
    pub(crate) fn not_below(&self, systematic: f64) -> (bool, String) {
        let bound = self.noise() + systematic;
        let short = self.theirs - self.ours;
        (
            short <= bound,
            format!(
                "{:.2} % of {} vs {:.2} % of {}: short by {short:.2} {} {bound:.2} ({:.2} noise + {systematic:.2} systematic)",
                self.ours,
                self.n_ours,
                self.theirs,
                self.n_theirs,
                if short <= bound { "<=" } else { ">" },
                self.noise(),
            ),
        )
    }
}

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "shares::the_bound_is_z_standard_errors_of_a_pooled_share",
        vec![],
        the_bound_is_z_standard_errors_of_a_pooled_share,
    )]
}

/// The bound against figures worked out by hand.
fn the_bound_is_z_standard_errors_of_a_pooled_share() -> TestResult {
    // p = 0.5, n = 10 000 each: sqrt(0.25 * 2e-4) = 0.0070711.
    let half = Shares {
        ours: 49.0,
        n_ours: 10_000,
        theirs: 51.0,
        n_theirs: 10_000,
    };
    let want = 100.0 * Z * 0.007_071_07;
    ensure!(
        (half.noise() - want).abs() < 1e-3,
        "{} for {want}",
        half.noise()
    );
    ensure!(half.within(0.0).0, "{}", half.within(0.0).1);
    ensure!(
        !half.within(-0.8).0,
        "2 points apart within 2.75 - 0.8: {}",
        half.within(-0.8).1
    );
    // A share one side never saw: pooled p = 2 / 800 = 0.0025,
    // sqrt(0.0025 * 0.9975 * (2 / 400)) = 0.0035311.
    let unseen = Shares {
        ours: 0.0,
        n_ours: 400,
        theirs: 0.5,
        n_theirs: 400,
    };
    let want = 100.0 * Z * 0.003_531_1;
    ensure!(
        (unseen.noise() - want).abs() < 1e-3,
        "{} for {want}",
        unseen.noise()
    );
    ensure!(unseen.not_below(0.0).0, "{}", unseen.not_below(0.0).1);
    let far = Shares {
        ours: 10.0,
        n_ours: 1000,
        theirs: 20.0,
        n_theirs: 1000,
    };
    ensure!(!far.within(0.0).0 && !far.not_below(0.0).0, "{far:?}");
    ensure!(
        Shares { ours: 30.0, ..far }.not_below(0.0).0,
        "an ours above is never short"
    );
    Ok(())
}
