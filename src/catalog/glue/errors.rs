//! Glue's failures as icetrim errors, in ClickHouse's form: each names the catalog (endpoint and
//! region, [`GlueOptions::describe`]), the call and the table; none quotes a secret.

use aws_sdk_glue::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use super::http::{never_connected, root_cause};
use super::{GlueOptions, UpdateOutcome};
use crate::error::{Error, ErrorKind};

/// Glue answered with an error (as the REST catalog's HTTP errors).
const CATALOG_ERROR: ErrorKind = ErrorKind::ReceivedErrorFromRemoteIoServer;
/// Glue could not be reached or did not answer in time.
const UNREACHABLE: ErrorKind = ErrorKind::NetworkError;

/// Which Glue call failed, for messages.
#[derive(Debug, Clone, Copy)]
pub(super) enum GlueCall {
    /// `GetDatabases`.
    Databases,
    /// `GetTables`.
    Tables,
    /// `GetTable`.
    Table,
    /// `BatchGetTableOptimizer`.
    Optimizers,
}

impl GlueCall {
    fn name(self) -> &'static str {
        match self {
            GlueCall::Databases => "GetDatabases",
            GlueCall::Tables => "GetTables",
            GlueCall::Table => "GetTable",
            GlueCall::Optimizers => "BatchGetTableOptimizer",
        }
    }
}

/// Error codes with which AWS refuses the caller's credentials or permissions.
const AUTH_CODES: &[&str] = &[
    "AccessDeniedException",
    "AccessDenied",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "InvalidClientTokenId",
    "IncompleteSignature",
    "MissingAuthenticationToken",
    "ExpiredTokenException",
    "ExpiredToken",
    "NotAuthorized",
];

fn what(database: &str, table: Option<&str>) -> String {
    match table {
        Some(t) => format!("table '{database}.{t}'"),
        None => format!("database '{database}'"),
    }
}

/// A failed read call (`GetDatabases`, `GetTables`, `GetTable`).
pub(super) fn sdk_error<E>(
    options: &GlueOptions,
    call: GlueCall,
    subject: Option<(&str, Option<&str>)>,
    error: SdkError<E, HttpResponse>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let catalog = options.describe();
    let about = subject
        .map(|(d, t)| format!(" for {}", what(d, t)))
        .unwrap_or_default();
    match &error {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("");
            let message = service.err().message().unwrap_or("");
            let status = service.raw().status().as_u16();
            if code == "EntityNotFoundException" {
                let (kind, text) = match subject {
                    Some((d, Some(t))) => (
                        ErrorKind::UnknownTable,
                        format!("Table '{d}.{t}' does not exist in {catalog}"),
                    ),
                    Some((d, None)) => (
                        ErrorKind::UnknownTable,
                        format!("Database (namespace) '{d}' does not exist in {catalog}"),
                    ),
                    None => (
                        CATALOG_ERROR,
                        format!("{catalog}: {call} found nothing", call = call.name()),
                    ),
                };
                return Error::new(kind, format!("{text} ({message})"));
            }
            if AUTH_CODES.contains(&code) || status == 401 || status == 403 {
                return Error::new(
                    CATALOG_ERROR,
                    format!(
                        "{catalog} refused the credentials or permissions of {} {about}: {code}: \
                         {message} (HTTP {status}); check aws_access_key_id, \
                         aws_secret_access_key and region",
                        call.name(),
                        about = about.trim_start()
                    ),
                );
            }
            Error::new(
                CATALOG_ERROR,
                format!(
                    "{catalog}: {}{about} failed: {code}: {message} (HTTP {status})",
                    call.name()
                ),
            )
        }
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => Error::new(
            UNREACHABLE,
            format!(
                "Cannot reach {catalog} ({}{about}): {}",
                call.name(),
                root_cause(&error)
            ),
        ),
        SdkError::ResponseError(_) => Error::new(
            ErrorKind::IncorrectData,
            format!(
                "{catalog} sent a malformed answer to {}{about}: {}",
                call.name(),
                root_cause(&error)
            ),
        ),
        _ => Error::new(
            CATALOG_ERROR,
            format!(
                "{catalog}: {}{about} failed: {}",
                call.name(),
                root_cause(&error)
            ),
        ),
    }
}

/// What a failed `UpdateTable` means for the commit: rejected (certainly not applied: a
/// conflict, or an error to report) or unknown.
pub(super) fn update_failure<E>(
    options: &GlueOptions,
    (database, table): (&str, &str),
    error: SdkError<E, HttpResponse>,
) -> UpdateOutcome
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let catalog = options.describe();
    match &error {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("");
            let message = service.err().message().unwrap_or("");
            let status = service.raw().status().as_u16();
            if code == "ConcurrentModificationException" {
                return UpdateOutcome::Rejected {
                    conflict: true,
                    error: Error::new(
                        CATALOG_ERROR,
                        format!(
                            "{catalog}: table '{database}.{table}' changed since it was read \
                             ({code}: {message})"
                        ),
                    ),
                };
            }
            if status >= 500 {
                return UpdateOutcome::Unknown {
                    why: format!("UpdateTable answered HTTP {status}: {code}: {message}"),
                };
            }
            let error = if code == "EntityNotFoundException" {
                Error::new(
                    ErrorKind::UnknownTable,
                    format!("Table '{database}.{table}' no longer exists in {catalog} ({message})"),
                )
            } else if AUTH_CODES.contains(&code) || status == 401 || status == 403 {
                Error::new(
                    CATALOG_ERROR,
                    format!(
                        "{catalog} refused to update table '{database}.{table}': {code}: {message} \
                         (HTTP {status}); the credentials need glue:UpdateTable"
                    ),
                )
            } else {
                Error::new(
                    CATALOG_ERROR,
                    format!(
                        "{catalog}: UpdateTable of '{database}.{table}' failed: {code}: {message} \
                         (HTTP {status})"
                    ),
                )
            };
            UpdateOutcome::Rejected {
                conflict: false,
                error,
            }
        }
        SdkError::DispatchFailure(_) if never_connected(&error) => UpdateOutcome::Rejected {
            conflict: false,
            error: Error::new(
                UNREACHABLE,
                format!(
                    "Cannot reach {catalog} (UpdateTable of '{database}.{table}'): {}",
                    root_cause(&error)
                ),
            ),
        },
        SdkError::ConstructionFailure(_) => UpdateOutcome::Rejected {
            conflict: false,
            error: Error::logical(format!(
                "UpdateTable of '{database}.{table}' could not be built: {}",
                root_cause(&error)
            )),
        },
        _ => UpdateOutcome::Unknown {
            why: format!("UpdateTable got no usable answer: {}", root_cause(&error)),
        },
    }
}

/// `BAD_ARGUMENTS`: the database's settings cannot make a client.
pub(super) fn bad_settings(options: &GlueOptions, why: &str) -> Error {
    Error::bad_arguments(format!("{}: {why}", options.describe()))
}

/// A table Glue knows that is not Iceberg.
pub(super) fn not_iceberg(
    options: &GlueOptions,
    (database, table): (&str, &str),
    table_type: Option<&str>,
) -> Error {
    Error::not_implemented(format!(
        "Table '{database}.{table}' in {} is not an Iceberg table (table_type = {}): icetrim \
         maintains Iceberg tables only",
        options.describe(),
        table_type.map_or("<none>".to_string(), |t| format!("'{t}'"))
    ))
}

/// An answer that lacks what the Iceberg convention needs.
pub(super) fn malformed(
    options: &GlueOptions,
    (database, table): (&str, &str),
    why: &str,
) -> Error {
    Error::incorrect_data(format!(
        "{}: table '{database}.{table}': {why}",
        options.describe()
    ))
}

#[cfg(test)]
mod tests {
    use aws_sdk_glue::operation::get_table::GetTableError;
    use aws_sdk_glue::operation::update_table::UpdateTableError;
    use aws_smithy_runtime_api::client::result::ConnectorError;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::error::ErrorMetadata;

    use super::*;

    fn options() -> GlueOptions {
        GlueOptions {
            endpoint: Some("http://127.0.0.1:5000".into()),
            region: Some("us-east-1".into()),
            access_key_id: Some("AKIDEXAMPLE".into()),
            secret_access_key: Some("S3CR3T".into()),
            ..GlueOptions::default()
        }
    }

    fn answer(status: u16) -> HttpResponse {
        HttpResponse::new(
            StatusCode::try_from(status).expect("a status"),
            SdkBody::empty(),
        )
    }

    fn meta(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder()
            .code(code)
            .message("what Glue said")
            .build()
    }

    fn update(code: &str, status: u16) -> UpdateOutcome {
        let e = SdkError::service_error(UpdateTableError::generic(meta(code)), answer(status));
        update_failure(&options(), ("db", "t"), e)
    }

    #[test]
    fn debug_output_hides_the_keys() {
        let text = format!("{:?}", options());
        assert!(
            !text.contains("S3CR3T") && !text.contains("AKIDEXAMPLE"),
            "{text}"
        );
        assert!(text.contains("127.0.0.1:5000"), "{text}");
    }

    #[test]
    fn a_concurrent_modification_is_a_conflict() {
        let outcome = update("ConcurrentModificationException", 400);
        assert!(
            matches!(outcome, UpdateOutcome::Rejected { conflict: true, .. }),
            "{outcome:?}"
        );
    }

    #[test]
    fn refusals_are_errors_and_server_failures_unknown() {
        for (code, status, kind) in [
            ("EntityNotFoundException", 400, ErrorKind::UnknownTable),
            ("AccessDeniedException", 400, CATALOG_ERROR),
            ("InvalidInputException", 400, CATALOG_ERROR),
        ] {
            match update(code, status) {
                UpdateOutcome::Rejected {
                    conflict: false,
                    error,
                } => {
                    assert_eq!(error.kind(), kind, "{code}: {error}");
                    assert!(error.message().contains("db.t"), "{error}");
                    assert!(error.message().contains("127.0.0.1:5000"), "{error}");
                    assert!(!error.to_string().contains("S3CR3T"), "{error}");
                    assert!(!error.to_string().contains("AKIDEXAMPLE"), "{error}");
                }
                other => panic!("{code}: {other:?}"),
            }
        }
        assert!(matches!(
            update("InternalServiceException", 500),
            UpdateOutcome::Unknown { .. }
        ));
        let lost: SdkError<UpdateTableError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::io("connection reset".into()));
        assert!(matches!(
            update_failure(&options(), ("db", "t"), lost),
            UpdateOutcome::Unknown { .. }
        ));
        let timeout: SdkError<UpdateTableError, HttpResponse> = SdkError::timeout_error("slow");
        assert!(matches!(
            update_failure(&options(), ("db", "t"), timeout),
            UpdateOutcome::Unknown { .. }
        ));
    }

    #[test]
    fn read_failures_name_the_catalog_and_the_table() {
        let missing = SdkError::service_error(
            GetTableError::generic(meta("EntityNotFoundException")),
            answer(400),
        );
        let e = sdk_error(
            &options(),
            GlueCall::Table,
            Some(("db", Some("t"))),
            missing,
        );
        assert_eq!(e.kind(), ErrorKind::UnknownTable);
        assert!(
            e.message().starts_with(
                "Table 'db.t' does not exist in Glue catalog at http://127.0.0.1:5000"
            ),
            "{e}"
        );
        let refused = SdkError::service_error(
            GetTableError::generic(meta("UnrecognizedClientException")),
            answer(400),
        );
        let e = sdk_error(
            &options(),
            GlueCall::Table,
            Some(("db", Some("t"))),
            refused,
        );
        assert_eq!(e.kind(), CATALOG_ERROR);
        assert!(e.message().contains("refused the credentials"), "{e}");
        assert!(!e.to_string().contains("S3CR3T"), "{e}");
        let down: SdkError<GetTableError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::io("connection refused".into()));
        let e = sdk_error(&options(), GlueCall::Databases, None, down);
        assert_eq!(e.kind(), UNREACHABLE);
        assert!(
            e.message()
                .contains("Cannot reach Glue catalog at http://127.0.0.1:5000"),
            "{e}"
        );
    }
}
