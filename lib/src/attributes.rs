//! Attributes that select drivers (`filter=`, `diff=`, `merge=`) from every source git reads: `.gitattributes` in the work tree and index, `info/attributes`, `core.attributesFile`, macros.
