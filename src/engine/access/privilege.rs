//! The privileges icetrim knows, as ClickHouse names them and nests them: each [`Privilege`] is a
//! node of ClickHouse's access-type tree (`ALL` ⊃ `ALTER` ⊃ `ALTER TABLE` ⊃ `ALTER EXECUTE`, …),
//! with its canonical name, its aliases and the level it can be granted at.
//!
//! Every node owns one bit of a [`Flags`] set; a node's [`Privilege::flags`] are its own bit and
//! those of everything below it. A group's own bit stands for ClickHouse's privileges of that group
//! that icetrim does not model (granting `ALTER TABLE` grants more than `ALTER SETTINGS` and
//! `ALTER EXECUTE` together), so a grant of every modelled child never prints as the group.

use std::fmt;

/// A set of privilege bits (one per [`Privilege`]).
pub(crate) type Flags = u32;

/// Where a privilege can be granted: `ON *.*` only, `ON db.*` (and `*.*`), or on a table too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Global,
    Database,
    Table,
}

/// An access type of ClickHouse that icetrim checks or groups (`GRANT <privilege> ON …`).
///
/// ```
/// use icetrim::engine::Privilege;
/// assert_eq!(Privilege::from_name("alter table execute"), Some(Privilege::AlterExecute));
/// assert_eq!(Privilege::AlterExecute.name(), "ALTER EXECUTE");
/// assert_eq!(Privilege::AlterExecute.parent(), Some(Privilege::AlterTable));
/// assert!(Privilege::Alter.includes(Privilege::AlterExecute));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Privilege {
    /// `SHOW DATABASES`: `USE db`, `SHOW CREATE DATABASE` (implied by any grant on the database).
    ShowDatabases,
    /// `SHOW TABLES`: seeing a table's name (implied by any grant on the table).
    ShowTables,
    /// `SHOW COLUMNS`: `DESCRIBE`, `SHOW CREATE TABLE` (implied by any grant on the table).
    ShowColumns,
    /// `SHOW`: the group of the three above.
    Show,
    /// `SELECT`: reading a table's rows (a host's query engine checks it).
    Select,
    /// `ALTER SETTINGS` (alias `ALTER MODIFY SETTING`): `ALTER TABLE … SET|UNSET TBLPROPERTIES`.
    AlterSettings,
    /// `ALTER EXECUTE` (alias `ALTER TABLE EXECUTE`): `ALTER TABLE … EXECUTE`, and the branch and
    /// tag statements.
    AlterExecute,
    /// `ALTER TABLE`: every table `ALTER`.
    AlterTable,
    /// `ALTER`: every `ALTER`.
    Alter,
    /// `CREATE DATABASE` (database level).
    CreateDatabase,
    /// `CREATE TABLE`.
    CreateTable,
    /// `CREATE`: the group of the two above.
    Create,
    /// `DROP DATABASE` (database level).
    DropDatabase,
    /// `DROP TABLE`.
    DropTable,
    /// `DROP`: the group of the two above.
    Drop,
    /// `OPTIMIZE` (alias `OPTIMIZE TABLE`): `OPTIMIZE TABLE [… MANIFEST]`.
    Optimize,
    /// `CREATE USER` (global).
    CreateUser,
    /// `DROP USER` (global).
    DropUser,
    /// `SHOW USERS` (global): `SHOW USERS`, `SHOW GRANTS FOR` another user.
    ShowUsers,
    /// `SHOW ACCESS`: the group of `SHOW USERS`.
    ShowAccess,
    /// `ACCESS MANAGEMENT`: users and their grants.
    AccessManagement,
    /// `ALL` (alias `ALL PRIVILEGES`): everything.
    All,
}

/// One node: the privilege, its canonical name, aliases, parent and level (leaves; groups take
/// the level of each of their members).
struct Node {
    privilege: Privilege,
    name: &'static str,
    aliases: &'static [&'static str],
    parent: Option<Privilege>,
    level: Level,
}

use Level::{Database, Global, Table};
use Privilege as P;

/// The tree in ClickHouse's declaration order (members before their group), which is also the
/// order names print in.
const NODES: &[Node] = &[
    node(P::ShowDatabases, "SHOW DATABASES", &[], Some(P::Show), Database),
    node(P::ShowTables, "SHOW TABLES", &[], Some(P::Show), Table),
    node(P::ShowColumns, "SHOW COLUMNS", &[], Some(P::Show), Table),
    node(P::Show, "SHOW", &[], Some(P::All), Table),
    node(P::Select, "SELECT", &[], Some(P::All), Table),
    node(
        P::AlterSettings,
        "ALTER SETTINGS",
        &[
            "ALTER SETTING",
            "ALTER MODIFY SETTING",
            "MODIFY SETTING",
            "RESET SETTING",
        ],
        Some(P::AlterTable),
        Table,
    ),
    node(
        P::AlterExecute,
        "ALTER EXECUTE",
        &["ALTER TABLE EXECUTE"],
        Some(P::AlterTable),
        Table,
    ),
    node(P::AlterTable, "ALTER TABLE", &[], Some(P::Alter), Table),
    node(P::Alter, "ALTER", &[], Some(P::All), Table),
    node(P::CreateDatabase, "CREATE DATABASE", &[], Some(P::Create), Database),
    node(P::CreateTable, "CREATE TABLE", &[], Some(P::Create), Table),
    node(P::Create, "CREATE", &[], Some(P::All), Table),
    node(P::DropDatabase, "DROP DATABASE", &[], Some(P::Drop), Database),
    node(P::DropTable, "DROP TABLE", &[], Some(P::Drop), Table),
    node(P::Drop, "DROP", &[], Some(P::All), Table),
    node(P::Optimize, "OPTIMIZE", &["OPTIMIZE TABLE"], Some(P::All), Table),
    node(P::CreateUser, "CREATE USER", &[], Some(P::AccessManagement), Global),
    node(P::DropUser, "DROP USER", &[], Some(P::AccessManagement), Global),
    node(
        P::ShowUsers,
        "SHOW USERS",
        &["SHOW CREATE USER"],
        Some(P::ShowAccess),
        Global,
    ),
    node(P::ShowAccess, "SHOW ACCESS", &[], Some(P::AccessManagement), Global),
    node(P::AccessManagement, "ACCESS MANAGEMENT", &[], Some(P::All), Global),
    node(P::All, "ALL", &["ALL PRIVILEGES"], None, Table),
];

const fn node(
    privilege: Privilege,
    name: &'static str,
    aliases: &'static [&'static str],
    parent: Option<Privilege>,
    level: Level,
) -> Node {
    Node {
        privilege,
        name,
        aliases,
        parent,
        level,
    }
}

impl Privilege {
    /// Every privilege, members before their group.
    pub const ALL: &'static [Privilege] = &[
        P::ShowDatabases,
        P::ShowTables,
        P::ShowColumns,
        P::Show,
        P::Select,
        P::AlterSettings,
        P::AlterExecute,
        P::AlterTable,
        P::Alter,
        P::CreateDatabase,
        P::CreateTable,
        P::Create,
        P::DropDatabase,
        P::DropTable,
        P::Drop,
        P::Optimize,
        P::CreateUser,
        P::DropUser,
        P::ShowUsers,
        P::ShowAccess,
        P::AccessManagement,
        P::All,
    ];

    fn node(self) -> &'static Node {
        // NODES lists every variant in `ALL`'s order (checked by a test).
        &NODES[self.index()]
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    /// ClickHouse's canonical name (`ALTER EXECUTE`), as `SHOW GRANTS` prints it.
    pub fn name(self) -> &'static str {
        self.node().name
    }

    /// The group this privilege belongs to (`None` for `ALL`).
    pub fn parent(self) -> Option<Privilege> {
        self.node().parent
    }

    /// The privilege named `name` (canonical name or alias, any case, words separated by any
    /// blanks).
    pub fn from_name(name: &str) -> Option<Privilege> {
        let words: Vec<String> = name
            .split_whitespace()
            .map(str::to_ascii_uppercase)
            .collect();
        let wanted = words.join(" ");
        NODES
            .iter()
            .find(|n| n.name == wanted || n.aliases.contains(&wanted.as_str()))
            .map(|n| n.privilege)
    }

    /// Whether holding `self` means holding `other` (itself, or a group above it).
    pub fn includes(self, other: Privilege) -> bool {
        let mut at = Some(other);
        while let Some(p) = at {
            if p == self {
                return true;
            }
            at = p.parent();
        }
        false
    }

    /// This privilege's own bit.
    pub(crate) fn bit(self) -> Flags {
        1 << self.index()
    }

    /// Its own bit and those of every member below it.
    pub(crate) fn flags(self) -> Flags {
        Self::ALL
            .iter()
            .filter(|p| self.includes(**p))
            .fold(0, |acc, p| acc | p.bit())
    }

    /// Whether the privilege is a leaf, not a group.
    pub(crate) fn is_leaf(self) -> bool {
        self.flags() == self.bit()
    }

    /// The lowest level the privilege's own bit may be granted at.
    pub(crate) fn level(self) -> Level {
        self.node().level
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The bits that may be granted on an object of `level` (a table holds no database-level or
/// global privilege).
pub(crate) fn grantable_at(level: Level) -> Flags {
    Privilege::ALL
        .iter()
        .filter(|p| p.level() >= level)
        .fold(0, |acc, p| acc | p.bit())
}

/// Every bit.
pub(crate) fn all_flags() -> Flags {
    Privilege::All.flags()
}

/// `flags` as the fewest names: a group when all of it is held, else its members. A group whose
/// own bit is held without all its members prints as the group, and the members it lacks come
/// back second (`GRANT ALTER TABLE …` then `REVOKE ALTER EXECUTE …` on the same object).
/// Only the bits of `mask` count (those grantable at the object's level: `ALL` on a table is all
/// a table can hold).
pub(crate) fn names(flags: Flags, mask: Flags) -> (Vec<Privilege>, Vec<Privilege>) {
    let mut granted = Vec::new();
    let mut lacking = Vec::new();
    collect(Privilege::All, flags & mask, mask, &mut granted, &mut lacking);
    sort_privileges(&mut granted);
    sort_privileges(&mut lacking);
    (granted, lacking)
}

/// Sorted in ClickHouse's order, each once.
pub(crate) fn sort_privileges(privileges: &mut Vec<Privilege>) {
    privileges.sort_by_key(|p| p.index());
    privileges.dedup();
}

fn collect(
    at: Privilege,
    flags: Flags,
    mask: Flags,
    granted: &mut Vec<Privilege>,
    lacking: &mut Vec<Privilege>,
) {
    let all = at.flags() & mask;
    if flags & all == 0 {
        return;
    }
    if flags & all == all {
        granted.push(at);
        return;
    }
    if flags & at.bit() != 0 {
        granted.push(at);
        let (missing, _) = names(all & !flags, mask);
        lacking.extend(missing);
        return;
    }
    for member in Privilege::ALL.iter().filter(|p| p.parent() == Some(at)) {
        collect(*member, flags, mask, granted, lacking);
    }
}

/// Text of a list of privileges: `SELECT, ALTER EXECUTE`.
pub(crate) fn list(privileges: &[Privilege]) -> String {
    privileges
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_privilege_in_order() {
        assert_eq!(NODES.len(), Privilege::ALL.len());
        for (node, privilege) in NODES.iter().zip(Privilege::ALL) {
            assert_eq!(node.privilege, *privilege);
        }
        // Members come before their group (ClickHouse's rule), so a group's index is above.
        for p in Privilege::ALL {
            if let Some(parent) = p.parent() {
                assert!(parent.index() > p.index(), "{p} before {parent}");
            }
        }
        assert!(Privilege::ALL.len() <= Flags::BITS as usize);
    }

    #[test]
    fn names_and_aliases_parse_as_clickhouse_spells_them() {
        for (text, p) in [
            ("ALTER EXECUTE", P::AlterExecute),
            ("alter   table execute", P::AlterExecute),
            ("ALTER TABLE", P::AlterTable),
            ("ALTER MODIFY SETTING", P::AlterSettings),
            ("OPTIMIZE TABLE", P::Optimize),
            ("ALL PRIVILEGES", P::All),
            ("SHOW CREATE USER", P::ShowUsers),
        ] {
            assert_eq!(Privilege::from_name(text), Some(p), "{text}");
        }
        assert_eq!(Privilege::from_name("ALTER EXECUTES"), None);
        assert_eq!(Privilege::from_name("INSERT"), None);
    }

    #[test]
    fn the_hierarchy_is_clickhouses() {
        assert!(P::AlterTable.includes(P::AlterExecute));
        assert!(P::Alter.includes(P::AlterExecute));
        assert!(P::All.includes(P::AlterExecute));
        assert!(!P::AlterExecute.includes(P::AlterTable));
        assert!(!P::Optimize.includes(P::AlterExecute));
        assert!(!P::Alter.includes(P::Optimize));
        assert!(P::All.includes(P::CreateUser));
        assert_eq!(P::AlterExecute.flags(), P::AlterExecute.bit());
        assert!(P::AlterTable.flags() & P::AlterExecute.bit() != 0);
    }

    #[test]
    fn flags_print_as_the_fewest_names() {
        let names = |flags| names(flags, all_flags());
        let (granted, lacking) = names(P::AlterExecute.flags() | P::AlterSettings.flags());
        assert_eq!(list(&granted), "ALTER SETTINGS, ALTER EXECUTE");
        assert!(lacking.is_empty());
        let (granted, lacking) = names(P::AlterTable.flags());
        assert_eq!(list(&granted), "ALTER TABLE");
        assert!(lacking.is_empty());
        let (granted, lacking) = names(P::AlterTable.flags() & !P::AlterExecute.bit());
        assert_eq!(list(&granted), "ALTER TABLE");
        assert_eq!(list(&lacking), "ALTER EXECUTE");
        let (granted, _) = names(P::Select.bit() | P::Optimize.bit() | P::AlterExecute.bit());
        assert_eq!(list(&granted), "SELECT, ALTER EXECUTE, OPTIMIZE");
        let (granted, _) = names(all_flags());
        assert_eq!(list(&granted), "ALL");
        let table = grantable_at(Level::Table);
        let (granted, lacking) = super::names(all_flags() & table, table);
        assert_eq!((list(&granted), lacking.len()), ("ALL".to_string(), 0));
    }

    #[test]
    fn levels_keep_database_and_global_privileges_off_tables() {
        let table = grantable_at(Level::Table);
        assert!(table & P::AlterExecute.bit() != 0);
        assert!(table & P::CreateDatabase.bit() == 0);
        assert!(table & P::CreateUser.bit() == 0);
        let database = grantable_at(Level::Database);
        assert!(database & P::CreateDatabase.bit() != 0);
        assert!(database & P::CreateUser.bit() == 0);
        assert_eq!(grantable_at(Level::Global), all_flags());
    }
}
