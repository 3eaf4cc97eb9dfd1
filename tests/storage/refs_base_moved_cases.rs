//! The scenarios of `refs_base_moved`: a statement, the other writer's statement the seam runs
//! between its plan and its commit, and what must hold at the end. Labels are the
//! `py_v2_refs_wap` fixture's (main a1..a7, branch `audit` at b2 forked at a5, tag `v1` on a3,
//! staged WAP snapshots w1 (`wap-1`) on a5 and w2 (`wap-2`) on a7).

/// One statement, on fixture labels.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stmt {
    Rollback(&'static str),
    /// `rollback_to_timestamp` halfway between the two snapshots' timestamps.
    RollbackBetween(&'static str, &'static str),
    SetCurrent(&'static str),
    FastForward(&'static str, &'static str),
    Cherrypick(&'static str),
    Publish(&'static str),
    CreateBranch(&'static str, &'static str),
    ReplaceBranch(&'static str, &'static str),
    CreateOrReplaceBranch(&'static str, &'static str),
    ReplaceTag(&'static str, &'static str),
    DropBranch(&'static str),
    DropTag(&'static str),
    SetProperty(&'static str, &'static str),
    UnsetProperty(&'static str),
}

/// Where a ref is expected at the end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At {
    L(&'static str),
    /// The snapshot the other writer's statement made current.
    Other,
    /// The snapshot the statement under test wrote.
    Ours,
    Gone,
}

pub(crate) use At::{Gone, L, Other, Ours};
pub(crate) use Stmt::*;

pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) setup: &'static [Stmt],
    pub(crate) statement: Stmt,
    pub(crate) other: Stmt,
    /// `None`: it commits; else the end of the refusal's message (`{label}` and `{other}` are
    /// replaced by snapshot ids).
    pub(crate) refusal: Option<&'static str>,
    /// The refs at the end, as changes to the fixture's (main a7, audit b2, v1 a3).
    pub(crate) refs: &'static [(&'static str, At)],
    /// The parent of the snapshot the statement wrote.
    pub(crate) ours_parent: Option<At>,
    pub(crate) properties: &'static [(&'static str, Option<&'static str>)],
    /// Read every ref with pyiceberg and ClickHouse at the end.
    pub(crate) interop: bool,
    /// On the REST catalog, where it applies the commit on the newer state itself (nothing the
    /// statement asserts moved, so no 409): the end of the catalog's refusal
    /// (`RECEIVED_ERROR_FROM_REMOTE_IO_SERVER`), if it refuses.
    pub(crate) rest_refusal: Option<&'static str>,
}

const fn case(name: &'static str, statement: Stmt, other: Stmt) -> Scenario {
    Scenario {
        name,
        setup: &[],
        statement,
        other,
        refusal: None,
        refs: &[],
        ours_parent: None,
        properties: &[],
        interop: false,
        rest_refusal: None,
    }
}

const DEV_AT_A5: &[Stmt] = &[CreateBranch("dev", "a5")];

pub(crate) const SCENARIOS: &[Scenario] = &[
    Scenario {
        refs: &[("main", L("a5"))],
        ..case(
            "rollback_to_snapshot moves main back over an append",
            Rollback("a5"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        refusal: Some(
            "a concurrent commit moved main from {a7} to {b2}, of which snapshot {a6} is not an \
             ancestor; nothing was changed",
        ),
        refs: &[("main", L("b2"))],
        ..case(
            "rollback_to_snapshot refused when its target left main's history",
            Rollback("a6"),
            SetCurrent("b2"),
        )
    },
    Scenario {
        refs: &[("main", L("a6"))],
        ..case(
            "rollback_to_timestamp moves main back to the snapshot it picked",
            RollbackBetween("a6", "a7"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        refusal: Some(
            "a concurrent commit moved main from {a7} to {b2}, of which snapshot {a6} is not an \
             ancestor; nothing was changed",
        ),
        refs: &[("main", L("b2"))],
        ..case(
            "rollback_to_timestamp refused when the snapshot it picked left main's history",
            RollbackBetween("a6", "a7"),
            SetCurrent("b2"),
        )
    },
    Scenario {
        refusal: Some("a concurrent commit moved main from {a7} to {other}; nothing was changed"),
        refs: &[("main", Other)],
        ..case(
            "set_current_snapshot refused over an append",
            SetCurrent("a3"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        refs: &[("main", L("a3")), ("dev", L("a2"))],
        ..case(
            "set_current_snapshot commits when only another ref changed",
            SetCurrent("a3"),
            CreateBranch("dev", "a2"),
        )
    },
    Scenario {
        setup: DEV_AT_A5,
        refs: &[("main", Other), ("dev", L("a7"))],
        interop: true,
        ..case(
            "fast_forward keeps its target when the source ref moved on",
            FastForward("dev", "main"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        setup: DEV_AT_A5,
        refusal: Some(
            "a concurrent commit moved branch dev from {a5} to {b2}, which is not an ancestor of \
             snapshot {a7}: fast-forwarding would undo that commit; nothing was changed",
        ),
        refs: &[("dev", L("b2"))],
        ..case(
            "fast_forward refused when the branch moved off the target's history",
            FastForward("dev", "main"),
            ReplaceBranch("dev", "b2"),
        )
    },
    Scenario {
        setup: DEV_AT_A5,
        refusal: Some("a concurrent commit dropped branch dev (at {a5}); nothing was changed"),
        refs: &[("dev", Gone)],
        ..case(
            "fast_forward refused when the branch was dropped",
            FastForward("dev", "main"),
            DropBranch("dev"),
        )
    },
    Scenario {
        refs: &[("main", Ours)],
        ours_parent: Some(L("w2")),
        interop: true,
        ..case(
            "cherrypick_snapshot re-applies on the moved main",
            Cherrypick("w1"),
            Publish("wap-2"),
        )
    },
    Scenario {
        refusal: Some(
            "a concurrent commit moved main from {a7} to {other}; snapshot {w1} was already \
             picked to create ancestor {other}; nothing was changed",
        ),
        refs: &[("main", Other)],
        ..case(
            "cherrypick_snapshot refused when another writer picked it",
            Cherrypick("w1"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        refs: &[("main", Ours)],
        ours_parent: Some(Other),
        interop: true,
        ..case(
            "publish_changes planned as a fast-forward re-applies on the moved main",
            Publish("wap-2"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        refusal: Some(
            "a concurrent commit moved main from {a7} to {w2}; snapshot {w2} is now main's head \
             or one of its ancestors; nothing was changed",
        ),
        refs: &[("main", L("w2"))],
        ..case(
            "publish_changes refused when main reached the snapshot meanwhile",
            Publish("wap-2"),
            SetCurrent("w2"),
        )
    },
    Scenario {
        setup: DEV_AT_A5,
        refusal: Some(
            "a concurrent commit moved branch dev from {a5} to {a7}; nothing was changed",
        ),
        refs: &[("dev", L("a7"))],
        ..case(
            "REPLACE BRANCH refused over a move of the branch",
            ReplaceBranch("dev", "a3"),
            FastForward("dev", "main"),
        )
    },
    Scenario {
        setup: DEV_AT_A5,
        refs: &[("main", Other), ("dev", L("a3"))],
        ..case(
            "REPLACE BRANCH commits when only main moved",
            ReplaceBranch("dev", "a3"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        refusal: Some("a concurrent commit moved tag v1 from {a3} to {a2}; nothing was changed"),
        refs: &[("v1", L("a2"))],
        ..case(
            "REPLACE TAG refused over a move of the tag",
            ReplaceTag("v1", "a4"),
            ReplaceTag("v1", "a2"),
        )
    },
    Scenario {
        refusal: Some("a concurrent commit created branch dev at {a2}; nothing was changed"),
        refs: &[("dev", L("a2"))],
        ..case(
            "CREATE OR REPLACE BRANCH refused over a branch created meanwhile",
            CreateOrReplaceBranch("dev", "a3"),
            CreateBranch("dev", "a2"),
        )
    },
    Scenario {
        refusal: Some("a concurrent commit moved main from {a7} to {other}; nothing was changed"),
        refs: &[("main", Other)],
        ..case(
            "REPLACE BRANCH main refused over an append",
            ReplaceBranch("main", "a5"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        setup: DEV_AT_A5,
        refusal: Some(
            "a concurrent commit moved branch dev from {a5} to {a7}; dropping it would lose that \
             commit; nothing was changed",
        ),
        refs: &[("dev", L("a7"))],
        ..case(
            "DROP BRANCH refused over a commit on the branch",
            DropBranch("dev"),
            FastForward("dev", "main"),
        )
    },
    Scenario {
        refs: &[("v1", Gone)],
        ..case(
            "DROP TAG drops a tag re-pointed meanwhile, as Java does",
            DropTag("v1"),
            ReplaceTag("v1", "a2"),
        )
    },
    Scenario {
        refs: &[("main", Other)],
        properties: &[("icetrim.test", Some("ours"))],
        ..case(
            "SET TBLPROPERTIES lands on the moved head",
            SetProperty("icetrim.test", "ours"),
            Cherrypick("w1"),
        )
    },
    Scenario {
        properties: &[("a", Some("1")), ("b", Some("2"))],
        ..case(
            "SET TBLPROPERTIES keeps another writer's property",
            SetProperty("a", "1"),
            SetProperty("b", "2"),
        )
    },
    Scenario {
        setup: &[SetProperty("k", "v")],
        properties: &[("k", None)],
        // pyiceberg's catalog refuses to remove a key that is not set (Java's ignores it).
        rest_refusal: Some("with HTTP 400: BadRequestException: 'k'"),
        ..case(
            "UNSET TBLPROPERTIES of a key another writer unset meanwhile",
            UnsetProperty("k"),
            UnsetProperty("k"),
        )
    },
];
