"""Job profiles: one YAML file per profile, loaded with line numbers, resolved through `extends`,
validated field by field, and saved atomically.

- fields.py      THE field table: every field, its check, flag, CLI generations, help, example
- validators.py  the value checks the table uses
- schema.py      derived from the table: SCHEMA, validation, problems; the `Profile` dataclass
- document.py    YAML with the line of every field; the `extends` merge
- store.py       shipped + user profiles, `extends` resolution, validated atomic saves
- overrides.py   `--set FIELD=VALUE`
- docs.py        the field table of docs/profiles.md, generated from fields.py

Merge rule for `extends`: mappings merge key by key (recursively), lists and scalars replace, and
a key set to `null` in the child removes what the parent set. `description` is inherited.
"""

from runai_tui.profiles.document import (
    MAX_PROFILE_BYTES,
    Document,
    merge,
    parse_document,
    read_text,
    to_yaml,
)
from runai_tui.profiles.fields import BY_NAME, FIELDS, RESTART, Field, SubField
from runai_tui.profiles.overrides import apply_overrides
from runai_tui.profiles.schema import (
    FIELD_NAMES,
    SCHEMA,
    FieldSpec,
    GroupSpec,
    MappingSpec,
    Problem,
    Profile,
    ProfileError,
    did_you_mean,
    field_paths,
    unsupported_fields,
    validate_data,
)
from runai_tui.profiles.store import (
    PROJECT_ROOT,
    ProfileEntry,
    ProfileStore,
    check_job_name,
    default_dirs,
    is_shipped,
    shipped_profiles_dir,
    user_profiles_dir,
)
from runai_tui.profiles.validators import (
    CAPABILITY,
    DNS1123_LABEL,
    ENV_NAME,
    PROFILE_NAME,
    QUALIFIED_KEY,
)

__all__ = [
    "BY_NAME",
    "CAPABILITY",
    "DNS1123_LABEL",
    "ENV_NAME",
    "FIELDS",
    "FIELD_NAMES",
    "MAX_PROFILE_BYTES",
    "PROFILE_NAME",
    "PROJECT_ROOT",
    "QUALIFIED_KEY",
    "RESTART",
    "SCHEMA",
    "Document",
    "Field",
    "FieldSpec",
    "GroupSpec",
    "MappingSpec",
    "Problem",
    "Profile",
    "ProfileEntry",
    "ProfileError",
    "ProfileStore",
    "SubField",
    "apply_overrides",
    "check_job_name",
    "default_dirs",
    "did_you_mean",
    "field_paths",
    "is_shipped",
    "merge",
    "parse_document",
    "read_text",
    "shipped_profiles_dir",
    "to_yaml",
    "unsupported_fields",
    "user_profiles_dir",
    "validate_data",
]
