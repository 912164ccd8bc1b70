// Keeps the target non-empty until its first source file lands; delete this file then.
