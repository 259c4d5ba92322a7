"""A PostgreSQL schema that holds code of its own is not written: every place a schema can make our statements
run a function (a column default, a CHECK constraint, a domain, an index expression, row security, a view, a
function or operator that shadows a built-in, a cast, an event trigger) is found before the first write, and
``catallax run`` into it exits 2 in one line naming it, with the planted function never called."""

import psycopg
import pytest

from market.store import make_engine
from tests.reliability.test_stored_code import cli

# The attacker's function: it records each call (and would rewrite the run's stored scenario, or worse).
EVIL = ["CREATE TABLE public.evil_calls (at timestamptz DEFAULT clock_timestamp())",
        "CREATE FUNCTION hidden.evil() RETURNS bigint LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO public.evil_calls DEFAULT VALUES; RETURN 1; END $$"]
PLANTS = {  # kind -> the statements that plant it (each calls hidden.evil() when our statements run)
    "column default": ["ALTER TABLE run_number ALTER COLUMN num SET DEFAULT nextval('run_number_num_seq') + hidden.evil() - 1"],
    "constraint": ["ALTER TABLE run ADD CONSTRAINT looks_fine CHECK (hidden.evil() = 1)"],
    "column type": ["CREATE DOMAIN hidden.text_checked AS text CHECK (hidden.evil() = 1)",
                    "ALTER TABLE run ALTER COLUMN scenario TYPE hidden.text_checked"],
    "index expression": ["CREATE FUNCTION hidden.f(text) RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT hidden.evil()'",
                         "CREATE INDEX looks_fine ON run ((hidden.f(id)))"],
    "policy": ["ALTER TABLE run ENABLE ROW LEVEL SECURITY", "ALTER TABLE run FORCE ROW LEVEL SECURITY",
               "CREATE POLICY looks_fine ON run USING (hidden.evil() = 1) WITH CHECK (hidden.evil() = 1)"],
    "view calling": ["CREATE OR REPLACE VIEW transfer AS SELECT * FROM transfer WHERE hidden.evil() = 1"],
    "function": ["CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS "
                 "$$ BEGIN PERFORM hidden.evil(); RETURN clock_timestamp(); END $$"],
    "operator": ["CREATE FUNCTION public.text_eq(text, varchar) RETURNS bool LANGUAGE plpgsql AS "
                 "$$ BEGIN PERFORM hidden.evil(); RETURN $1 = $2::text; END $$",
                 "CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = varchar, FUNCTION = public.text_eq)"],
    "event trigger": ["CREATE FUNCTION hidden.on_ddl() RETURNS event_trigger LANGUAGE plpgsql AS "
                      "$$ BEGIN PERFORM hidden.evil(); END $$",
                      "CREATE EVENT TRIGGER looks_fine ON ddl_command_end EXECUTE FUNCTION hidden.on_ddl()"],
}


def execute(url: str, *statements: str) -> list | None:
    """Each statement in its own transaction, as the superuser the test server has; the last one's rows."""
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        rows = None
        for statement in statements:
            cur = conn.execute(statement)
            rows = cur.fetchall() if cur.description else rows
        return rows


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(PLANTS))
def test_a_run_into_a_schema_with_planted_code_is_refused_and_calls_nothing(postgres, tmp_path, capsys, kind):
    url = postgres.new_database()
    make_engine(url).dispose()  # the project's own schema, as a run made it
    execute(url, "CREATE SCHEMA hidden", *EVIL)
    execute(url, *PLANTS[kind])
    code, _, err = cli(["run", "relay", "--set", "run.episodes=3", "--db", url], capsys)
    assert execute(url, "SELECT count(*) FROM public.evil_calls") == [(0,)]  # the planted function never ran
    assert code == 2 and kind in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_the_projects_own_schema_is_written(postgres, capsys):
    url = postgres.new_database()
    code, out, err = cli(["run", "relay", "--set", "run.episodes=3", "--db", url, "--json"], capsys)
    assert code in (0, None), err
