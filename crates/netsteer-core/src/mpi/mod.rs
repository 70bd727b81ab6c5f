//! MPI jobs streamed through the engine: collective algorithms as per-rank
//! generators ([`algo`]) and the rank-by-rank matching that turns them into flows
//! as the ranks reach them ([`stream`]).

pub mod algo;
pub mod stream;

pub use algo::{Algo, Collective, JobChoices, Op};
pub use stream::{check_steps, step_totals, Job, JobSpec, Progress, Span, Step, Stream};
