"""The schema registry's errors: Confluent's HTTP status plus ``error_code`` and message.

Every failure of a registry operation is a :class:`RegistryError`; the router turns it into
Confluent's body ``{"error_code": N, "message": "..."}`` with the HTTP status Confluent
answers. The codes and the wording of the messages are Confluent's (``io.confluent.kafka.
schemaregistry.rest.exceptions``; Karapace answers the same), because clients match on the
codes (confluent-kafka raises ``SchemaRegistryError`` carrying them) and people search
for the messages.
"""
from __future__ import annotations

VERSION_RULE = 'Allowed values are between [1, 2^31-1] and the string "latest"'
LEVELS_TEXT = ("Invalid compatibility level. Valid values are none, backward, forward, full, "
               "backward_transitive, forward_transitive, and full_transitive")


class RegistryError(Exception):
    """An answer other than success: ``status`` (HTTP), ``code`` (Confluent's error_code)."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict:
        return {"error_code": self.code, "message": self.message}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id=None) -> RegistryError:
    text = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RegistryError(404, 40403, text)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true "
                                     "to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                     "permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted."
                                     "Set permanent=true to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted "
                                     "first before being permanently deleted")


def subject_config_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level "
                                     "compatibility configured")


def subject_mode_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode "
                                     "configured")


def incompatible(subject: str, reasons: list[str]) -> RegistryError:
    return RegistryError(409, 409, "Schema being registered is incompatible with an earlier "
                                   f"schema for subject \"{subject}\", details: {reasons}")


def invalid_schema(reason: str) -> RegistryError:
    text = reason if reason.lower().startswith("invalid schema") else f"Invalid schema: {reason}"
    return RegistryError(422, 42201, text)


def invalid_version(version) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version "
                                     f"id. {VERSION_RULE}")


def invalid_level() -> RegistryError:
    return RegistryError(422, 42203, LEVELS_TEXT)


def invalid_mode(mode) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode {mode}. Valid values are READWRITE, "
                                     "READONLY, READONLY_OVERRIDE, IMPORT")


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def reference_exists(subject: str, version: int) -> RegistryError:
    return RegistryError(422, 42206, "One or more references exist to the schema "
                                     f"{{magic=1,keytype=SCHEMA,subject={subject},version={version}}}.")


def id_conflict(schema_id: int) -> RegistryError:
    return RegistryError(422, 42207, f"Overwrite new schema with id {schema_id} is not permitted.")


def invalid_subject(subject: str) -> RegistryError:
    return RegistryError(422, 42208, f"The specified subject '{subject}' is not valid.")


def unprocessable(message: str) -> RegistryError:
    return RegistryError(422, 422, message)


def bad_request(message: str) -> RegistryError:
    return RegistryError(400, 400, message)


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error while storing the schema: {message}")


def timeout(message: str) -> RegistryError:
    return RegistryError(500, 50002, message)


def http(status: int, phrase: str) -> RegistryError:
    """Jersey's own answers for what never reaches a resource (404, 405, 415...)."""
    return RegistryError(status, status, f"HTTP {status} {phrase}")
