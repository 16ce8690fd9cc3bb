# The DAG scripts/airflow triggers: FAULTLINE_AIRFLOW_TASKS (default 4) independent long tasks.
# On KWOK nodes no container runs, so a worker pod stays Running and its task instance stays
# queued: long-running work whose pods two schedulers can fight over.
import os

import pendulum
from airflow import DAG
from airflow.operators.bash import BashOperator

with DAG(
    dag_id="faultline_long_tasks",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    schedule=None,
    catchup=False,
    max_active_tasks=64,
    default_args={"retries": 0},
) as dag:
    for i in range(int(os.environ.get("FAULTLINE_AIRFLOW_TASKS", "4"))):
        BashOperator(task_id=f"long_{i}", bash_command="sleep 3600")
