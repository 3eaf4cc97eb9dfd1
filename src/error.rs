//! The one error type of icetrim: every failure a user can see, as a kind with its ClickHouse code.
//!
//! Printed exactly as ClickHouse prints an exception:
//! `Code: 36. DB::Exception: <message>. (BAD_ARGUMENTS)`.
//! Callers branch on [`Error::kind`], never on message text. Codes follow ClickHouse's
//! `src/Common/ErrorCodes.cpp`.

use std::fmt;
use std::sync::Arc;

/// What went wrong, as ClickHouse names it. The numeric code is [`ErrorKind::code`].
///
/// New kinds may be added in any release: a `match` outside icetrim needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// 36: an argument, property or setting value is invalid.
    BadArguments,
    /// 41: a timestamp argument could not be parsed.
    CannotParseDatetime,
    /// 42: a procedure got more or fewer arguments than it takes.
    NumberOfArgumentsDoesntMatch,
    /// 46: a function name a `SELECT` calls that the query engine does not know.
    UnknownFunction,
    /// 47: a column name in a `SELECT` that the table does not have.
    UnknownIdentifier,
    /// 207: a column name in a `SELECT` that more than one of its tables has.
    AmbiguousIdentifier,
    /// 48: valid request that icetrim refuses to carry out (e.g. files outside the table location).
    NotImplemented,
    /// 57: `CREATE TABLE` of a name that is taken.
    TableAlreadyExists,
    /// 60: the table is not registered.
    UnknownTable,
    /// 62: the SQL text does not parse.
    SyntaxError,
    /// 73: `FORMAT` names a format icetrim does not print.
    UnknownFormat,
    /// 81: the database is not known.
    UnknownDatabase,
    /// 82: `CREATE DATABASE` of a name that is taken.
    DatabaseAlreadyExists,
    /// 86: a remote server (a catalog) answered with an HTTP error.
    ReceivedErrorFromRemoteIoServer,
    /// 210: a remote server (a catalog) could not be reached, or did not answer in time.
    NetworkError,
    /// 107: a file the metadata needs does not exist.
    FileDoesntExist,
    /// 115: `SET` of a setting icetrim does not know.
    UnknownSetting,
    /// 117: a file's content is malformed (metadata JSON, Avro).
    IncorrectData,
    /// 290: a bounded loop ran out (commit retries).
    LimitExceeded,
    /// 241: a memory bound (`iceberg_compaction_max_memory_bytes`) cannot be kept.
    MemoryLimitExceeded,
    /// 344: a ClickHouse gate setting is off.
    SupportIsDisabled,
    /// 392: the statement is not allowed in this form.
    QueryIsProhibited,
    /// 394: the statement was cancelled.
    QueryWasCancelled,
    /// 456: a `{name:Type}` query parameter has no value.
    UnknownQueryParameter,
    /// 457: a query parameter's value does not parse as its type.
    BadQueryParameter,
    /// 50: a type name icetrim does not know (in a query parameter).
    UnknownType,
    /// 74: a local file or folder was opened but could not be read.
    CannotReadFromFileDescriptor,
    /// 75: a local file was opened but could not be written (or renamed into place).
    CannotWriteToFileDescriptor,
    /// 76: a local file or folder could not be opened (permissions, a link loop, not a folder).
    CannotOpenFile,
    /// 172: a local folder could not be created (e.g. the data path is a file).
    CannotCreateDirectory,
    /// 458: a local file could not be deleted.
    CannotUnlink,
    /// 499: S3 (or another object store but Azure) answered with an error.
    StorageError,
    /// 500: Azure Blob Storage answered with an error.
    AzureBlobStorageError,
    /// 504: a file that must be new already exists (commit conflict).
    FileAlreadyExists,
    /// 306: a statement nests deeper than `max_parser_depth`.
    TooDeepRecursion,
    /// 552: a command-line option the program does not know.
    UnrecognizedArguments,
    /// 49: an internal invariant broke; a bug in icetrim.
    LogicalError,
    /// 497: the user lacks the privilege the statement needs.
    AccessDenied,
    /// 192: no user of that name.
    UnknownUser,
    /// 493: `CREATE USER` of a name that is taken.
    AccessEntityAlreadyExists,
    /// 509: a privilege granted on an object it does not apply to.
    InvalidGrant,
}

impl ErrorKind {
    /// The ClickHouse error code.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::BadArguments => 36,
            ErrorKind::CannotParseDatetime => 41,
            ErrorKind::NumberOfArgumentsDoesntMatch => 42,
            ErrorKind::UnknownFunction => 46,
            ErrorKind::UnknownIdentifier => 47,
            ErrorKind::AmbiguousIdentifier => 207,
            ErrorKind::NotImplemented => 48,
            ErrorKind::LogicalError => 49,
            ErrorKind::TableAlreadyExists => 57,
            ErrorKind::UnknownTable => 60,
            ErrorKind::SyntaxError => 62,
            ErrorKind::UnknownFormat => 73,
            ErrorKind::UnknownDatabase => 81,
            ErrorKind::DatabaseAlreadyExists => 82,
            ErrorKind::ReceivedErrorFromRemoteIoServer => 86,
            ErrorKind::NetworkError => 210,
            ErrorKind::FileDoesntExist => 107,
            ErrorKind::UnknownSetting => 115,
            ErrorKind::IncorrectData => 117,
            ErrorKind::LimitExceeded => 290,
            ErrorKind::MemoryLimitExceeded => 241,
            ErrorKind::SupportIsDisabled => 344,
            ErrorKind::QueryIsProhibited => 392,
            ErrorKind::QueryWasCancelled => 394,
            ErrorKind::UnknownQueryParameter => 456,
            ErrorKind::BadQueryParameter => 457,
            ErrorKind::UnknownType => 50,
            ErrorKind::CannotReadFromFileDescriptor => 74,
            ErrorKind::CannotWriteToFileDescriptor => 75,
            ErrorKind::CannotOpenFile => 76,
            ErrorKind::CannotCreateDirectory => 172,
            ErrorKind::CannotUnlink => 458,
            ErrorKind::StorageError => 499,
            ErrorKind::AzureBlobStorageError => 500,
            ErrorKind::FileAlreadyExists => 504,
            ErrorKind::TooDeepRecursion => 306,
            ErrorKind::UnrecognizedArguments => 552,
            ErrorKind::AccessDenied => 497,
            ErrorKind::UnknownUser => 192,
            ErrorKind::AccessEntityAlreadyExists => 493,
            ErrorKind::InvalidGrant => 509,
        }
    }

    /// Whether storage failed to carry out a request (object storage answered with an error, or a
    /// local file or folder could not be opened, read, written, created or removed), as opposed
    /// to a file that is missing or malformed: the caller cannot tell what the file holds.
    pub fn is_storage_failure(self) -> bool {
        matches!(
            self,
            ErrorKind::StorageError
                | ErrorKind::AzureBlobStorageError
                | ErrorKind::CannotOpenFile
                | ErrorKind::CannotReadFromFileDescriptor
                | ErrorKind::CannotWriteToFileDescriptor
                | ErrorKind::CannotCreateDirectory
                | ErrorKind::CannotUnlink
        )
    }

    /// The ClickHouse error name, e.g. `BAD_ARGUMENTS`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::BadArguments => "BAD_ARGUMENTS",
            ErrorKind::CannotParseDatetime => "CANNOT_PARSE_DATETIME",
            ErrorKind::NumberOfArgumentsDoesntMatch => "NUMBER_OF_ARGUMENTS_DOESNT_MATCH",
            ErrorKind::UnknownFunction => "UNKNOWN_FUNCTION",
            ErrorKind::UnknownIdentifier => "UNKNOWN_IDENTIFIER",
            ErrorKind::AmbiguousIdentifier => "AMBIGUOUS_IDENTIFIER",
            ErrorKind::NotImplemented => "NOT_IMPLEMENTED",
            ErrorKind::LogicalError => "LOGICAL_ERROR",
            ErrorKind::TableAlreadyExists => "TABLE_ALREADY_EXISTS",
            ErrorKind::UnknownTable => "UNKNOWN_TABLE",
            ErrorKind::SyntaxError => "SYNTAX_ERROR",
            ErrorKind::UnknownFormat => "UNKNOWN_FORMAT",
            ErrorKind::UnknownDatabase => "UNKNOWN_DATABASE",
            ErrorKind::DatabaseAlreadyExists => "DATABASE_ALREADY_EXISTS",
            ErrorKind::ReceivedErrorFromRemoteIoServer => "RECEIVED_ERROR_FROM_REMOTE_IO_SERVER",
            ErrorKind::NetworkError => "NETWORK_ERROR",
            ErrorKind::FileDoesntExist => "FILE_DOESNT_EXIST",
            ErrorKind::UnknownSetting => "UNKNOWN_SETTING",
            ErrorKind::IncorrectData => "INCORRECT_DATA",
            ErrorKind::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorKind::MemoryLimitExceeded => "MEMORY_LIMIT_EXCEEDED",
            ErrorKind::SupportIsDisabled => "SUPPORT_IS_DISABLED",
            ErrorKind::QueryIsProhibited => "QUERY_IS_PROHIBITED",
            ErrorKind::QueryWasCancelled => "QUERY_WAS_CANCELLED",
            ErrorKind::UnknownQueryParameter => "UNKNOWN_QUERY_PARAMETER",
            ErrorKind::BadQueryParameter => "BAD_QUERY_PARAMETER",
            ErrorKind::UnknownType => "UNKNOWN_TYPE",
            ErrorKind::CannotReadFromFileDescriptor => "CANNOT_READ_FROM_FILE_DESCRIPTOR",
            ErrorKind::CannotWriteToFileDescriptor => "CANNOT_WRITE_TO_FILE_DESCRIPTOR",
            ErrorKind::CannotOpenFile => "CANNOT_OPEN_FILE",
            ErrorKind::CannotCreateDirectory => "CANNOT_CREATE_DIRECTORY",
            ErrorKind::CannotUnlink => "CANNOT_UNLINK",
            ErrorKind::StorageError => "S3_ERROR",
            ErrorKind::AzureBlobStorageError => "AZURE_BLOB_STORAGE_ERROR",
            ErrorKind::FileAlreadyExists => "FILE_ALREADY_EXISTS",
            ErrorKind::TooDeepRecursion => "TOO_DEEP_RECURSION",
            ErrorKind::UnrecognizedArguments => "UNRECOGNIZED_ARGUMENTS",
            ErrorKind::AccessDenied => "ACCESS_DENIED",
            ErrorKind::UnknownUser => "UNKNOWN_USER",
            ErrorKind::AccessEntityAlreadyExists => "ACCESS_ENTITY_ALREADY_EXISTS",
            ErrorKind::InvalidGrant => "INVALID_GRANT",
        }
    }
}

/// The underlying error an [`Error`] was made from, shared so that `Error` stays `Clone`.
type Source = Arc<dyn std::error::Error + Send + Sync>;

/// An icetrim error: a kind and a message that names what failed (table, file, field), and
/// optionally the underlying error it was made from ([`std::error::Error::source`]).
///
/// Two errors are equal when their kinds and messages are: the source is detail for logs.
/// `Debug` shows the source by its `Display` text only.
#[derive(Clone, thiserror::Error)]
#[error("Code: {}. DB::Exception: {}. ({})", kind.code(), message, kind.name())]
pub struct Error {
    kind: ErrorKind,
    message: String,
    #[source]
    source: Option<Source>,
}

impl Error {
    /// An error of `kind` with `message` (no trailing period; [`Display`](fmt::Display) adds it).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let mut message = message.into();
        while message.ends_with('.') {
            message.pop();
        }
        Error {
            kind,
            message,
            source: None,
        }
    }

    /// An error of `kind` with `message`, made from `source` (what
    /// [`std::error::Error::source`] returns); the message is printed as [`Error::new`] prints it.
    pub fn with_source(
        kind: ErrorKind,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error {
            source: Some(Arc::new(source)),
            ..Self::new(kind, message)
        }
    }

    /// The underlying error this one was made from, as itself (downcast it to the store's or the
    /// parser's error type). [`std::error::Error::source`] gives the same error behind its shared
    /// handle: its text and its own sources, but no downcast.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The ClickHouse error code.
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// The message without the `Code: N. DB::Exception:` frame.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with `context` put in front of the message: `"<context>: <message>"`.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }

    /// The same error with `text` appended to the message (a hint: `". Maybe you meant: …"`).
    pub fn append(self, text: &str) -> Self {
        let mut message = self.message;
        message.push_str(text);
        while message.ends_with('.') {
            message.pop();
        }
        Error { message, ..self }
    }

    /// `BAD_ARGUMENTS`.
    pub fn bad_arguments(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadArguments, message)
    }

    /// `INCORRECT_DATA`: a file's content is malformed.
    pub fn incorrect_data(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::IncorrectData, message)
    }

    /// `NOT_IMPLEMENTED`.
    pub fn not_implemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, message)
    }

    /// `SYNTAX_ERROR`.
    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::SyntaxError, message)
    }

    /// `LOGICAL_ERROR`: a broken internal invariant.
    pub fn logical(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::LogicalError, message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = self.source.as_ref().map(|source| source.to_string());
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &source)
            .finish()
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

/// icetrim's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_clickhouse() {
        let e = Error::bad_arguments("Unknown parameter 'foo' for expire_snapshots");
        assert_eq!(
            e.to_string(),
            "Code: 36. DB::Exception: Unknown parameter 'foo' for expire_snapshots. (BAD_ARGUMENTS)"
        );
    }

    #[test]
    fn one_trailing_period_only() {
        let e = Error::new(ErrorKind::SyntaxError, "Syntax error at end.");
        assert_eq!(
            e.to_string(),
            "Code: 62. DB::Exception: Syntax error at end. (SYNTAX_ERROR)"
        );
    }

    /// The storage codes as ClickHouse 26.9 names them (`errorCodeToName`).
    #[test]
    fn storage_codes_are_clickhouses() {
        for (kind, code, name) in [
            (
                ErrorKind::CannotReadFromFileDescriptor,
                74,
                "CANNOT_READ_FROM_FILE_DESCRIPTOR",
            ),
            (
                ErrorKind::CannotWriteToFileDescriptor,
                75,
                "CANNOT_WRITE_TO_FILE_DESCRIPTOR",
            ),
            (ErrorKind::CannotOpenFile, 76, "CANNOT_OPEN_FILE"),
            (
                ErrorKind::CannotCreateDirectory,
                172,
                "CANNOT_CREATE_DIRECTORY",
            ),
            (ErrorKind::CannotUnlink, 458, "CANNOT_UNLINK"),
            (ErrorKind::StorageError, 499, "S3_ERROR"),
            (
                ErrorKind::AzureBlobStorageError,
                500,
                "AZURE_BLOB_STORAGE_ERROR",
            ),
        ] {
            assert_eq!((kind.code(), kind.name()), (code, name));
            assert!(kind.is_storage_failure(), "{name}");
        }
        assert!(!ErrorKind::FileDoesntExist.is_storage_failure());
        assert!(!ErrorKind::IncorrectData.is_storage_failure());
    }

    #[test]
    fn the_source_is_kept_through_context_and_not_compared() {
        use std::error::Error as _;
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied by policy");
        let e = Error::with_source(ErrorKind::StorageError, "Cannot read s3://b/t/m.avro", io)
            .context("table t");
        assert_eq!(
            e.to_string(),
            "Code: 499. DB::Exception: table t: Cannot read s3://b/t/m.avro. (S3_ERROR)"
        );
        let source = e.source().map(|source| source.to_string());
        assert_eq!(source.as_deref(), Some("denied by policy"));
        let cloned = e.clone();
        assert!(cloned.source().is_some());
        let plain = Error::new(
            ErrorKind::StorageError,
            "table t: Cannot read s3://b/t/m.avro",
        );
        assert!(plain.source().is_none());
        assert_eq!(plain, e);
        assert_ne!(plain, Error::bad_arguments(plain.message()));
    }

    #[test]
    fn context_keeps_kind() {
        let e = Error::incorrect_data("bad magic").context("manifest s3://b/t/m.avro");
        assert_eq!(e.kind(), ErrorKind::IncorrectData);
        assert_eq!(e.message(), "manifest s3://b/t/m.avro: bad magic");
    }
}
