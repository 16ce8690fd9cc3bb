# Loaded by the Airflow schedulers scripts/airflow starts (PYTHONPATH): the only change to Airflow
# is the User-Agent of its Kubernetes client, which names the scheduler
# ($FAULTLINE_AIRFLOW_USER_AGENT, e.g. airflow-scheduler-1), so that the proxy's audit records and
# the harness's no-unexpected-deletes evidence say which scheduler sent a request. Both
# schedulers would otherwise send the same "OpenAPI-Generator/<version>/python".
import os

_agent = os.environ.get("FAULTLINE_AIRFLOW_USER_AGENT")
if _agent:
    try:
        from kubernetes.client import api_client
    except ImportError:  # not a process that talks to Kubernetes
        pass
    else:
        _init = api_client.ApiClient.__init__

        def _init_named(self, *args, **kwargs):
            _init(self, *args, **kwargs)
            self.user_agent = f"{_agent} {self.user_agent}"

        api_client.ApiClient.__init__ = _init_named
