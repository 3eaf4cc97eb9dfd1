//! The privileges icetrim knows, as ClickHouse names them and nests them: each [`Privilege`] is a
//! node of ClickHouse's access-type tree (`ALL` ⊃ `ALTER` ⊃ `ALTER TABLE` ⊃ `ALTER EXECUTE`, …),
//! with its canonical name, its aliases and the level it can be granted at.
//!
//! Every leaf owns one bit of a [`Flags`] set; a group's [`Privilege::flags`] are the bits of the
//! leaves below it. A group is exactly the members icetrim models: holding `ALTER SETTINGS` and
//! `ALTER EXECUTE` is holding `ALTER TABLE`, and `SHOW GRANTS` prints it so.

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
    node(
        P::ShowDatabases,
        "SHOW DATABASES",
        &[],
        Some(P::Show),
        Database,
    ),
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
    node(
        P::CreateDatabase,
        "CREATE DATABASE",
        &[],
        Some(P::Create),
        Database,
    ),
    node(P::CreateTable, "CREATE TABLE", &[], Some(P::Create), Table),
    node(P::Create, "CREATE", &[], Some(P::All), Table),
    node(
        P::DropDatabase,
        "DROP DATABASE",
        &[],
        Some(P::Drop),
        Database,
    ),
    node(P::DropTable, "DROP TABLE", &[], Some(P::Drop), Table),
    node(P::Drop, "DROP", &[], Some(P::All), Table),
    node(
        P::Optimize,
        "OPTIMIZE",
        &["OPTIMIZE TABLE"],
        Some(P::All),
        Table,
    ),
    node(
        P::CreateUser,
        "CREATE USER",
        &[],
        Some(P::AccessManagement),
        Global,
    ),
    node(
        P::DropUser,
        "DROP USER",
        &[],
        Some(P::AccessManagement),
        Global,
    ),
    node(
        P::ShowUsers,
        "SHOW USERS",
        &["SHOW CREATE USER"],
        Some(P::ShowAccess),
        Global,
    ),
    node(
        P::ShowAccess,
        "SHOW ACCESS",
        &[],
        Some(P::AccessManagement),
        Global,
    ),
    node(
        P::AccessManagement,
        "ACCESS MANAGEMENT",
        &[],
        Some(P::All),
        Global,
    ),
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

    /// A leaf's bit (none for a group).
    pub(crate) fn bit(self) -> Flags {
        if self.is_leaf() { 1 << self.index() } else { 0 }
    }

    /// The bits of every leaf at or below this privilege.
    pub(crate) fn flags(self) -> Flags {
        Self::ALL
            .iter()
            .filter(|p| self.includes(**p))
            .fold(0, |acc, p| acc | p.bit())
    }

    /// Whether the privilege is a leaf, not a group.
    pub(crate) fn is_leaf(self) -> bool {
        !Self::ALL.iter().any(|p| p.parent() == Some(self))
    }

    /// The lowest level the privilege may be granted at (a group: its members').
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

/// `flags` as the fewest names: a group when all of it is held, else its members. Only the bits
/// of `mask` count (those grantable at the object's level: `ALL` on a table is all a table can
/// hold).
pub(crate) fn names(flags: Flags, mask: Flags) -> Vec<Privilege> {
    let mut granted = Vec::new();
    collect(Privilege::All, flags & mask, mask, &mut granted);
    sort_privileges(&mut granted);
    granted
}

/// Sorted in ClickHouse's order, each once.
pub(crate) fn sort_privileges(privileges: &mut Vec<Privilege>) {
    privileges.sort_by_key(|p| p.index());
    privileges.dedup();
}

fn collect(at: Privilege, flags: Flags, mask: Flags, granted: &mut Vec<Privilege>) {
    let all = at.flags() & mask;
    if flags & all == 0 {
        return;
    }
    let mut members = Privilege::ALL.iter().filter(|p| p.parent() == Some(at));
    if flags & all == all {
        // A group that is one member in icetrim prints as that member (`ALTER TABLE`, not
        // `ALTER`).
        match (members.next(), members.next()) {
            (Some(only), None) if only.flags() & mask == all => {
                collect(*only, flags, mask, granted)
            }
            _ => granted.push(at),
        }
        return;
    }
    for member in Privilege::ALL.iter().filter(|p| p.parent() == Some(at)) {
        collect(*member, flags, mask, granted);
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
        assert_eq!(
            P::AlterTable.flags(),
            P::AlterExecute.bit() | P::AlterSettings.bit()
        );
        assert_eq!(P::AlterTable.bit(), 0);
    }

    #[test]
    fn flags_print_as_the_fewest_names() {
        let names = |flags| names(flags, all_flags());
        let granted = names(P::AlterExecute.flags() | P::Optimize.flags());
        assert_eq!(list(&granted), "ALTER EXECUTE, OPTIMIZE");
        assert_eq!(list(&names(P::AlterTable.flags())), "ALTER TABLE");
        let both = P::AlterExecute.flags() | P::AlterSettings.flags();
        assert_eq!(
            list(&names(both)),
            "ALTER TABLE",
            "a group is what icetrim models of it"
        );
        let granted = names(P::Select.bit() | P::Optimize.bit() | P::AlterExecute.bit());
        assert_eq!(list(&granted), "SELECT, ALTER EXECUTE, OPTIMIZE");
        assert_eq!(list(&names(all_flags())), "ALL");
        let table = grantable_at(Level::Table);
        assert_eq!(list(&super::names(all_flags(), table)), "ALL");
        assert_eq!(list(&super::names(P::Show.flags(), table)), "SHOW");
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
