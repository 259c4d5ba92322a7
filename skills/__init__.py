"""Skills: library, SKILL.md format, credit, workflow penalties, edits, gate, lineage (issue 6)."""
