"""Read a DT by its qualified name through Spark SQL, as a notebook would (the end of `make demo`).

Usage: python scripts/read_by_name.py PROJECT_DIR QUALIFIED_NAME
"""

from __future__ import annotations

import sys

from dtcli.engine.launch.session import project_session
from dtcli.project import load_project


def main(project_dir: str, name: str) -> None:
    spark = project_session(load_project(project_dir))
    spark.sparkContext.setLogLevel("ERROR")
    print(f'spark.table("{name}"):')
    spark.table(name).orderBy("customer_id").show(10, truncate=False)
    spark.sql("SHOW TABLES IN " + name.rsplit(".", 1)[0]).show(truncate=False)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:3])
