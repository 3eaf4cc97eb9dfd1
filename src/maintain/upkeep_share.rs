//! How a `SYSTEM MAINTAIN` run that maintains several tables at once splits its budgets: the
//! session's compaction memory, its metadata read and delete concurrency and its read cache
//! bound (`iceberg_statement_cache_max_bytes`) are one budget for
//! the whole run, shared evenly by the tables running at the same time, never multiplied by
//! the parallelism. Data in, data out: no I/O.

/// The least compaction memory one table is given (compaction refuses less). A budget too small
/// to give each parallel table this much runs fewer tables at once.
pub const COMPACTION_MEMORY_FLOOR: u64 = 32 * 1024 * 1024;

/// A run's budgets (the session's settings) and how many tables it may maintain at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunBudget {
    pub max_parallel_tables: u64,
    pub compaction_memory_bytes: u64,
    pub read_concurrency: u64,
    pub delete_concurrency: u64,
    pub read_cache_bytes: u64,
}

/// What each of the tables maintained at once gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableShare {
    /// Tables maintained at once: the asked parallelism, at most the number of tables, and
    /// fewer when the memory would not give each [`COMPACTION_MEMORY_FLOOR`].
    pub parallel: usize,
    pub compaction_memory_bytes: u64,
    pub read_concurrency: u64,
    pub delete_concurrency: u64,
    pub read_cache_bytes: u64,
}

/// The share of `budget` each of at most `tables` tables running at once gets.
pub fn table_share(budget: &RunBudget, tables: usize) -> TableShare {
    let tables = u64::try_from(tables).unwrap_or(u64::MAX);
    let by_memory = (budget.compaction_memory_bytes / COMPACTION_MEMORY_FLOOR).max(1);
    let parallel = budget.max_parallel_tables.min(tables).min(by_memory).max(1);
    TableShare {
        parallel: usize::try_from(parallel).unwrap_or(1),
        compaction_memory_bytes: budget.compaction_memory_bytes / parallel,
        read_concurrency: (budget.read_concurrency / parallel).max(1),
        delete_concurrency: (budget.delete_concurrency / parallel).max(1),
        read_cache_bytes: budget.read_cache_bytes / parallel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GIB: u64 = 1024 * 1024 * 1024;

    fn budget(parallel: u64, memory: u64) -> RunBudget {
        RunBudget {
            max_parallel_tables: parallel,
            compaction_memory_bytes: memory,
            read_concurrency: 32,
            delete_concurrency: 10,
            read_cache_bytes: GIB,
        }
    }

    #[test]
    fn the_session_budget_is_split_not_multiplied() {
        let share = table_share(&budget(4, 2 * GIB), 50);
        assert_eq!(share.parallel, 4);
        assert_eq!(share.compaction_memory_bytes, GIB / 2);
        assert_eq!((share.read_concurrency, share.delete_concurrency), (8, 2));
    }

    #[test]
    fn fewer_tables_than_the_parallelism_get_bigger_shares() {
        let share = table_share(&budget(8, 2 * GIB), 2);
        assert_eq!(share.parallel, 2);
        assert_eq!(share.compaction_memory_bytes, GIB);
        // No table at all: one slot, the whole budget.
        assert_eq!(table_share(&budget(8, 2 * GIB), 0).parallel, 1);
    }

    #[test]
    fn a_small_memory_budget_runs_fewer_tables_at_once() {
        let share = table_share(&budget(8, 100 * 1024 * 1024), 50);
        assert_eq!(share.parallel, 3);
        assert!(share.compaction_memory_bytes >= COMPACTION_MEMORY_FLOOR);
        let tiny = table_share(&budget(8, 1024), 50);
        assert_eq!((tiny.parallel, tiny.compaction_memory_bytes), (1, 1024));
    }

    proptest! {
        #[test]
        fn shares_never_add_up_to_more_than_the_budget(
            parallel in 1u64..64,
            memory in 1u64..(64 * GIB),
            read in 1u64..256,
            delete in 1u64..256,
            tables in 0usize..600,
        ) {
            let b = RunBudget {
                max_parallel_tables: parallel,
                compaction_memory_bytes: memory,
                read_concurrency: read,
                delete_concurrency: delete,
                read_cache_bytes: memory,
            };
            let share = table_share(&b, tables);
            let n = share.parallel as u64;
            prop_assert!(n >= 1 && n <= parallel.max(1));
            prop_assert!(n <= (tables as u64).max(1));
            prop_assert!(share.compaction_memory_bytes * n <= memory);
            prop_assert!(share.read_cache_bytes * n <= memory);
            prop_assert!(n == 1 || share.compaction_memory_bytes >= COMPACTION_MEMORY_FLOOR);
            // Concurrency: at least one each; beyond that, never more than the budget.
            prop_assert!(share.read_concurrency >= 1 && share.delete_concurrency >= 1);
            prop_assert!(share.read_concurrency * n <= read.max(n));
            prop_assert!(share.delete_concurrency * n <= delete.max(n));
        }
    }
}
