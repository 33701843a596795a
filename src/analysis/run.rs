//! What the whole run did, where the evidence knows it (`lineup record` counts every access
//! and the program's user time): the floor under which a line's transfers, or a layout's
//! saving, do not matter for the run. `diagnose` weighs each line against it and `optimize`
//! and `predict` each layout's saving ([`crate::analysis::plan::keep_if_negligible`]), so
//! the three cannot disagree on whether there is anything to fix.

use serde::Serialize;

use crate::analysis::machine::MachineModel;
use crate::profile::Profile;

/// With run totals (a recording), a line matters when the cost model prices at least one
/// transfer per this many of the run's accesses on it: a transfer costs on the order of a
/// hundred accesses, so 1e-4 of the accesses is about 1% of the run's time. A CPU whose
/// accesses to a member are below it neither writes nor shares the member (main reading the
/// per-thread totals at the end).
const RUN_ACCESS_SHARE: f64 = 1e-4;
/// With the program's user CPU time known (`user_seconds`, from the recorder's wait for it), a
/// line also needs transfers worth this share of that time to matter: a program whose work
/// is mostly in code lineup does not instrument (libbz2 under pbzip2) makes few accesses, and
/// their share alone would call a few dozen transfers over seconds a finding. User time, not
/// system time: transfers stall the program's own code, and its time in the kernel (a pipe
/// hand-over, I/O) is not time a layout of its data can win back.
const RUN_TIME_SHARE: f64 = 0.01;
/// What recording one access can add to the program's user CPU time, at most, the runtime's
/// start-up, its thread and its trace included: seed 003's replica taking turns under
/// `--sample 1` used 0.09-0.10 s of user time more than its plain run for 117K accesses, about
/// 800 ns each, on a loaded 2-core guest; this is that with a margin. The recorded time less
/// this per access is a lower bound on the program's own.
const RECORDED_ACCESS_NS_BOUND: f64 = 2000.0;
/// What one transfer can cost, at most: the presets' dearest, a remote HITM of 325 cycles at
/// 2 GHz, is 163 ns; a queue on the line can make it a few times that.
const TRANSFER_NS_BOUND: f64 = 500.0;

/// What the whole run did, when the evidence knows it (`lineup record` counts every
/// access and simulates every transfer): verdicts need a rate that matters against it.
/// Sampled kernel evidence (c2c, perf script) has no such total: perf lists only lines it
/// found contended, and a struct's lines are weighed against its busiest one (`diagnose`'s `RARE`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunTotals {
    pub accesses: f64,
    pub transfers: f64,
    /// The recorded program's user CPU time (its threads and waited-for children), when the
    /// recorder measured it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_seconds: Option<f64>,
}

impl RunTotals {
    /// The run's totals from a recording's summary and its simulated transfers (every
    /// type's and line's `lcl_hitm`); `None` for evidence without a run total.
    pub fn from_profile(profile: &Profile) -> Option<RunTotals> {
        let record = profile.summary.get("record")?;
        let accesses = *record.get("accesses")?;
        if accesses <= 0.0 {
            return None;
        }
        let transfers = profile
            .types
            .iter()
            .flat_map(|t| t.accesses.iter())
            .chain(profile.lines.iter().flat_map(|l| l.accesses.iter()))
            .map(|a| a.counts.transfers())
            .sum();
        let user_seconds = record
            .get("user_seconds")
            .copied()
            .filter(|s| s.is_finite() && *s > 0.0);
        Some(RunTotals {
            accesses,
            transfers,
            user_seconds,
        })
    }

    /// Accesses (or transfers) below this are negligible for the run: [`RUN_ACCESS_SHARE`]
    /// of its accesses, or, when the program's user CPU time is known and larger, the transfers
    /// that at [`TRANSFER_NS_BOUND`] each would make [`RUN_TIME_SHARE`] of its own time.
    pub fn floor(&self) -> f64 {
        (RUN_ACCESS_SHARE * self.accesses).max(self.time_floor().unwrap_or(0.0))
    }

    /// The transfers worth [`RUN_TIME_SHARE`] of the program's own user CPU time: the recorded
    /// time less what recording its accesses can have added ([`RECORDED_ACCESS_NS_BOUND`]).
    fn time_floor(&self) -> Option<f64> {
        let own_ns = (self.user_seconds? * 1e9 - self.accesses * RECORDED_ACCESS_NS_BOUND).max(0.0);
        Some(RUN_TIME_SHARE * own_ns / TRANSFER_NS_BOUND)
    }

    /// What the floor is, in words: the share of the run it stands for.
    pub fn floor_basis(&self) -> String {
        match self.time_floor() {
            Some(t) if t > RUN_ACCESS_SHARE * self.accesses => format!(
                "{}% of the program's own user CPU time: of its {:.2} s, at least {:.2} s are not recording's ({} ns an access at most), at {} ns a transfer at most",
                RUN_TIME_SHARE * 100.0,
                self.user_seconds.unwrap_or(0.0),
                t * TRANSFER_NS_BOUND / RUN_TIME_SHARE / 1e9,
                RECORDED_ACCESS_NS_BOUND,
                TRANSFER_NS_BOUND,
            ),
            _ => format!(
                "{}% of the run's accesses: a transfer costs about a hundred accesses, so about 1% of the run's time",
                RUN_ACCESS_SHARE * 100.0
            ),
        }
    }

    /// Whether a line the model prices at `modeled` transfers over the run matters in it: at
    /// least [`RunTotals::floor`]. Never the simulated transfers: those are this run's
    /// interleaving, which the machine's load decides.
    pub fn matters(&self, modeled: f64) -> bool {
        modeled > 0.0 && modeled >= self.floor()
    }
}

impl RunTotals {
    /// The floor in modeled cycles: its transfers at the machine's cheapest (a local HITM),
    /// so that a saving is called negligible only when it is so at the lowest price.
    pub fn floor_cycles(&self, machine: &MachineModel) -> f64 {
        self.floor() * machine.local_hitm
    }

    /// A layout's saving of `cycles` against the floor, in words.
    pub fn weighed(&self, cycles: f64, machine: &MachineModel) -> String {
        format!(
            "{cycles:.0} modeled cycles over the run, under its floor of {:.0} transfers ({}) at {:.0} cycles each, {:.0} cycles",
            self.floor(),
            self.floor_basis(),
            machine.local_hitm,
            self.floor_cycles(machine)
        )
    }
}
