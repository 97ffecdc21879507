"""The cobra `--help` of the runai CLI generations the fakes play, from the published reference pages.

The reference pages are cobra's generated docs of each command: `### Options` is the help's
`Flags:` section and `### Options inherited from parent commands` its `Global Flags:`. The flag
lines below are those pages' lines (flag names and types exactly; long descriptions shortened).
Sources (docs/runai-cli.md §8 lists them per flag):

- "2.18": run-ai/docs `docs/Researcher/cli-reference/new-cli/` (the 2.18-2.20 pages):
  runai_training_pytorch.md @0b84179, runai_training_pytorch_submit.md @029bc11,
  runai_training_pytorch_describe.md @7b38f49, runai_training_pytorch_logs.md @7b38f49,
  runai_training_list.md @7b38f49, runai_training_pytorch_exec.md @2776e72,
  runai_training_pytorch_port-forward.md @029bc11, runai_training_pytorch_delete.md @73d9d26.
- "2.25": the GitBook pages of 2.25 (run-ai-docs.nvidia.com/self-hosted/reference/cli/runai/,
  mirrored verbatim in dirkpetersen/slurm2runai `docs/run-ai/reference/cli/runai/` @065862f):
  runai_training_pytorch.md, _submit.md, _describe.md, _logs.md, runai_training_list.md; the
  verbs' pages as summarised in docs/runai-cli.md §2.4-2.6.
- "3.0": docs.nvidia.com/run-ai/self-hosted/v3.0/reference/cli/runai/training/ —
  runai-training-pytorch.md (the verbs, with suspend and resume) and
  runai-training-pytorch-submit.md (its usage and examples); the stored copies hold no full
  flag list, so its flag lines are 2.25's (the nearest documented), with v3.0's examples.
- "v1": CLI v1 has no `runai training` (run-ai/docs runai-submit-dist-pytorch.md; [V1SRC]).
"""

from __future__ import annotations

GLOBAL_2_18 = """\
      --config-file string   config file name; can be set by environment variable RUNAI_CLI_CONFIG_FILE (default "config.json")
      --config-path string   config path; can be set by environment variable RUNAI_CLI_CONFIG_PATH (default "~/.runai/")
  -d, --debug                enable debug mode
  -q, --quiet                enable quiet mode, suppress all output except error messages
      --verbose              enable verbose mode"""

GLOBAL_2_25 = """\
      --config-file string   config file name; can be set by environment variable RUNAI_CLI_CONFIG_FILE (default "config.json")
      --config-path string   config path; can be set by environment variable RUNAI_CLI_CONFIG_PATH
  -d, --debug                enable debug mode
  -q, --quiet                enable quiet mode, suppress all output except error messages
      --verbose              enable verbose mode"""

PROJECT_2_18 = (
    "  -p, --project string   Specify the project to which the command applies. By default, "
    "commands apply to the default project. To change the default project use "
    "‘runai config project <project name>’"
)
PROJECT_2_25 = (
    "  -p, --project string   Specify the project for the command to use. Defaults to the "
    "project set in the context, if any. Use 'runai project set <project>' to set the default."
)

SUBMIT_2_18 = """\
      --allow-privilege-escalation                     Allow the job to gain additional privileges after starting
      --annotation stringArray                         Set of annotations to populate into the container running the workspace
      --attach                                         If true, wait for the pod to start running, and then attach to the pod as if 'runai attach' was called.
      --auto-deletion-time-after-completion duration   The length of time after which a completed job is automatically deleted (default 0s)
      --backoff-limit int                              The number of times the job will be retried before failing
      --capability stringArray                         The POSIX capabilities to add when running containers.
  -c, --command                                        If true, override the image's entrypoint with the command supplied after '--'
      --configmap-map-volume stringArray               Mount ConfigMap as a volume. Use the fhe format name=CONFIGMAP_NAME,path=PATH
      --cpu-core-limit float                           CPU core limit (e.g. 0.5, 1)
      --cpu-core-request float                         CPU core request (e.g. 0.5, 1)
      --cpu-memory-limit string                        CPU memory limit to allocate for the job (e.g. 1G, 500M)
      --cpu-memory-request string                      CPU memory to allocate for the job (e.g. 1G, 500M)
      --create-home-dir                                Create a temporary home directory.
  -e, --environment stringArray                        Set environment variables in the container
      --existing-pvc stringArray                       Mount an existing persistent volume. Use the format: claimname=CLAIM_NAME,path=PATH
      --extended-resource stringArray                  Request access to an extended resource. Use the format: resource_name=quantity
      --external-url stringArray                       Expose URL from the job container.
      --git-sync stringArray                           Specifies git repositories to mount into the container.
  -g, --gpu-devices-request int32                      GPU units to allocate for the job (e.g. 1, 2)
      --gpu-memory-limit string                        GPU memory limit to allocate for the job (e.g. 1G, 500M)
      --gpu-memory-request string                      GPU memory to allocate for the job (e.g. 1G, 500M)
      --gpu-portion-limit float                        GPU portion limit, must be no less than the gpu-memory-request (between 0 and 1, e.g. 0.5, 0.2)
      --gpu-portion-request float                      GPU portion request (between 0 and 1, e.g. 0.5, 0.2)
      --gpu-request-type string                        GPU request type (portion|memory|migProfile)
  -h, --help                                           help for submit
      --host-ipc                                       Whether to enable host IPC. (Default: false)
      --host-network                                   Whether to enable host networking. (Default: false)
      --host-path stringArray                          Volumes to mount into the container.
  -i, --image string                                   The image for the workload
      --image-pull-policy string                       Set image pull policy. One of: Always, IfNotPresent, Never. Defaults to Always (default "Always")
      --label stringArray                              Set of labels to populate into the container running the workspace
      --large-shm                                      Request large /dev/shm device to mount
      --master-args                                    Arguments to pass to the master pod container command.
      --master-environment stringArray                 Set master environment variables in the container
      --master-extended-resource stringArray           Request access to an extended resource. Use the format: resource_name=quantity
      --master-gpu-devices-request int32               GPU units to allocate for the job (e.g. 1, 2)
      --master-gpu-portion-limit float                 GPU portion limit, must be no less than the gpu-memory-request (between 0 and 1, e.g. 0.5, 0.2)
      --master-gpu-portion-request float               GPU portion request (between 0 and 1, e.g. 0.5, 0.2)
      --master-no-pvcs                                 Do not mount any persistent volumes in the master pod
      --max-replicas int32                             Maximum number of replicas for an elastic PyTorch job
      --mig-profile string                             MIG profile to allocate for the job (1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb)
      --min-replicas int32                             Minimum number of replicas for an elastic PyTorch job
      --name-prefix string                             Set defined prefix for the workload name and add index as a suffix
      --new-pvc stringArray                            Mount a persistent volume, create it if it does not exist.
      --nfs stringArray                                NFS storage details. Use the format: path=PATH,server=SERVER,mountpath=MOUNT_PATH,readwrite
      --no-master                                      Do not create a separate pod for the master
      --node-pools stringArray                         List of node pools to use for scheduling the job, ordered by priority
      --node-type string                               Enforce node type affinity by setting a node-type label
      --pod-running-timeout duration                   Pod check for running state timeout.
      --port stringArray                               Expose ports from the job container.
      --preferred-pod-topology-key string              If possible, all pods of this job will be scheduled onto nodes that have a label with this key and identical values
{project}
      --required-pod-topology-key string               Enforce scheduling pods of this job onto nodes that have a label with this key and identical values
      --run-as-gid int                                 The group ID the container will run with
      --run-as-uid int                                 The user ID the container will run with
      --run-as-user                                    takes the uid, gid, and supplementary groups fields from the token
      --s3 stringArray                                 s3 storage details.
      --seccomp-profile string                         Indicates which kind of seccomp profile will be applied to the container
      --stdin                                          Keep stdin open on the container(s) in the pod, even if nothing is attached
      --supplemental-groups ints                       Comma seperated list of groups (IDs) that the user running the container belongs to
      --toleration stringArray                         Toleration details.
  -t, --tty                                            Allocate a TTY for the container
      --user-group-source string                       Indicate the way to determine the user and group ids of the container
      --wait-for-submit duration                       Waiting duration for the workload to be created in the cluster. Defaults to 1 minute (1m)
      --workers int32                                  the number of workers that will be allocated for running the workload
      --working-dir string                             Set the container's working directory""".replace(
    "{project}", PROJECT_2_18
)

SUBMIT_2_25 = """\
      --allow-privilege-escalation                     Allow the container to gain additional privileges after starting.
      --annotation stringArray                         Set of annotations to populate into the container running the workload
      --attach                                         Wait for the pod to start running, then attach to it as if 'runai attach' was called. Implies --tty and --stdin.
      --auto-deletion-time-after-completion duration   Automatically delete a completed job after a specified duration (e.g. 5s, 2m, 3h). (default 0s)
      --backoff-limit int32                            Number of times to retry a failed job before marking it as failed.
      --capability stringArray                         Add POSIX capabilities to the container. Defaults to the runtime's default set.
      --clean-pod-policy string                        Specifies which pods will be deleted when the workload reaches a terminal state (completed/failed). Valid values are None, All, Running.
                                                       * Running - Only pods still running when a job completes (for example, parameter servers) will be deleted immediately.
                                                       * All     - All (including completed) pods will be deleted immediately when the job finishes.
                                                       * None    - No pods will be deleted when the job completes. (Default)
  -c, --command                                        If true, override the image's entrypoint with the command supplied after '--'
      --compute string                                 Specifies the compute resource asset to use for the workload.
      --configmap-map-volume stringArray               Mount a ConfigMap as a volume. Format: name=CONFIGMAP_NAME,path=PATH,subpath=SUBPATH,default-mode=DEFAULT_MODE.
      --cpu-core-limit positiveFloat                   Maximum number of CPU cores allowed (e.g. 0.5, 1).
      --cpu-core-request positiveFloat                 Number of CPU cores to request (e.g. 0.5, 1).
      --cpu-memory-limit string                        Maximum memory allowed (e.g. 1G, 500M).
      --cpu-memory-request string                      Amount of memory to request (e.g. 1G, 500M).
      --create-home-dir                                Create a temporary home directory for the container.
      --datasource stringArray                         Specifies the data source asset to attach to the workload.
      --datavolume stringArray                         Mount a data volume. Format: name=DATA_VOLUME_NAME,mountpath=MOUNT_PATH.
      --empty-dir-volume stringArray                   Mount an empty directory as a volume. Format: name=NAME,path=PATH,medium=MEDIUM,size-limit=SIZE.
      --env-my-credentials stringArray                 Set an environment variable from a user credential.
      --env-pod-field-ref stringArray                  Set an environment variable from a pod field reference. Format: ENV_VARIABLE=FIELD_REFERENCE.
      --env-secret stringArray                         Set an environment variable from a Kubernetes secret. Format: ENV_VARIABLE=secret-name,key=secret-key.
      --environment stringArray                        Specifies the environment asset to use for the workload.
  -e, --environment-variable stringArray               Set environment variables in the container. Format: --environment-variable name=value --environment-variable name-b=value-b.
      --exclude-node stringArray                       Nodes that will be excluded from use by the scheduler. Format: --exclude-node node-a --exclude-node node-b
      --existing-pvc stringArray                       Mount an existing PersistentVolumeClaim. Format: claimname=CLAIM_NAME,path=PATH. Auto-complete supported.
      --extended-resource stringArray                  Request access to a Kubernetes extended resource. Format: resource_name=quantity.
      --external-url stringArray                       Expose a URL from the workload container.
      --git-sync stringArray                           Mount a Git repository into the container.
  -g, --gpu-devices-request positiveInt                Number of GPU devices to allocate for the workload (e.g. 1, 2).
      --gpu-memory-limit string                        Maximum GPU memory to allocate (e.g. 1G, 500M).
      --gpu-memory-request string                      Amount of GPU memory to allocate (e.g. 1G, 500M).
      --gpu-portion-limit positiveFloat                Maximum GPU fraction allowed for the workload (between 0 and 1).
      --gpu-portion-request positiveFloat              Fraction of a GPU to allocate (between 0 and 1, e.g. 0.5).
      --gpu-request-type string                        Type of GPU request: portion, memory
  -h, --help                                           help for submit
      --host-ipc                                       Enable host IPC for the container. Default: false.
      --host-network                                   Enable host networking for the container. Default: false.
      --host-path stringArray                          Mount a host path as a volume.
  -i, --image string                                   The container image to use for the workload.
      --image-pull-my-credentials stringArray          Use a user credential for authenticating image pulls.
      --image-pull-policy string                       Image pull policy for the container. Valid values: Always, IfNotPresent, Never.
      --label stringArray                              Set of labels to populate into the container running the workspace
      --large-shm                                      Request a large /dev/shm device to mount in the container. Useful for memory-intensive workloads.
      --master-args string                             Specifies the arguments to pass to the master pod container command
      --master-command string                          Specifies the command to run in the master pod container, overriding the image's default entrypoint.
      --master-cpu-core-limit positiveFloat            Maximum number of CPU cores allowed for the master pod (e.g., 0.5, 1).
      --master-cpu-core-request positiveFloat          Number of CPU cores to request for the master pod (e.g., 0.5, 1).
      --master-cpu-memory-limit string                 Maximum memory allowed for the master pod (e.g., 1G, 500M).
      --master-cpu-memory-request string               Amount of memory to request for the master pod (e.g., 1G, 500M).
      --master-environment-variable stringArray        Set environment variables in the master container.
      --master-extended-resource stringArray           Request access to a Kubernetes extended resource. Format: resource_name=quantity.
      --master-gpu-devices-request positiveInt         Number of GPU devices to allocate for the master pod (e.g., 1, 2).
      --master-gpu-portion-limit positiveFloat         Maximum GPU fraction allowed for the master pod (between 0 and 1).
      --master-gpu-portion-request positiveFloat       Fraction of a GPU to allocate to the master pod (between 0 and 1, e.g., 0.5).
      --master-no-pvcs                                 Do not mount any persistent volumes in the master pod
      --master-restart-policy restart-policy           Restart policy for master pod. Valid values: Always, OnFailure, Never.
      --max-replicas int32                             Maximum number of replicas for an elastic PyTorch job
      --min-replicas int32                             Minimum number of replicas for an elastic PyTorch job
      --name-prefix string                             Set defined prefix for the workload name and add index as a suffix
      --new-pvc stringArray                            Create and mount a new volume.
      --nfs stringArray                                Mount an NFS volume. Format: path=PATH,server=SERVER,mountpath=MOUNT_PATH,readwrite.
      --no-master                                      Do not create a separate pod for the master
      --node-pools stringArray                         Node pools to use for scheduling the job, ordered by priority. Format: --node-pools pool-a --node-pools pool-b
      --node-type string                               Enforce node type affinity by setting a node-type label.
      --pod-running-timeout duration                   Timeout for pod to reach running state (e.g. 5s, 2m, 3h).
      --port stringArray                               Expose ports from the workload container. Format: service-type=NodePort,container=80,external=8080.
      --preemptibility preemptibility                  Specify whether the workload can be preempted by higher-priority workloads. Valid values: preemptible, non-preemptible.
      --preferred-pod-topology-key string              If possible, schedule all pods of this workload on nodes with a matching label key and value. Format: key=VALUE.
      --priority string                                Sets the workload’s scheduling priority. Valid values: very-low, low, medium-low, medium, medium-high, high, very-high.
                                                       Overrides the default priority for the workload type. Changing priority does not update preemptibility automatically.
      --privileged                                     Grants the container full access to the host, bypassing almost all container isolation; the container acts like root.
{project}
      --required-pod-topology-key string               Require scheduling pods of this workload on nodes with a matching label key and value. Format: key=VALUE.
      --restart-policy restart-policy                  Restart policy for worker pods. Valid values: Always, OnFailure, Never.
      --run-as-gid int                                 Group ID to run the container as.
      --run-as-non-root                                Force the container to run as a non-root user.
      --run-as-uid int                                 User ID to run the container as.
      --run-as-user                                    Set the user and group IDs for the container. Uses local terminal credentials if not specified.
      --s3 stringArray                                 Mount an S3 bucket as a volume.
      --seccomp-profile string                         Seccomp profile for the container. Valid values: RuntimeDefault, Unconfined, or Localhost.
      --secret-volume stringArray                      Mount a Kubernetes Secret as a volume. Format: path=PATH,name=SECRET_RESOURCE_NAME.
      --stdin                                          Keep stdin open on the container(s) in the pod, even if nothing is attached.
      --supplemental-groups ints                       Comma-separated list of group IDs for the container user.
      --template string                                The name of the template to use for submitting this workload.
      --termination-grace-period duration              The length of time (like 5s or 2m, higher than zero) the workload's pod is expected to terminate gracefully upon probe failure. (default 0s)
      --toleration stringArray                         Add Kubernetes tolerations. Format: operator=Equal|Exists,key=KEY,[value=VALUE],[effect=NoSchedule|NoExecute|PreferNoSchedule],[seconds=SECONDS].
  -t, --tty                                            Allocate a TTY for the container. Useful for interactive workloads.
      --user-group-source string                       How to determine user/group IDs. Valid values: fromTheImage, fromIdpToken.
      --wait-for-submit duration                       How long to wait for the workload to be created in the cluster. Default: 1m.
      --workers int32                                  the number of workers that will be allocated for running the workload
      --working-dir string                             Working directory inside the container. Overrides the default working directory set in the image.""".replace(
    "{project}", PROJECT_2_25
)

DESCRIBE_2_18 = """\
      --compute             Show compute information (default true)
      --containers          Include container information in pods
      --event-limit int32   Limit the number of events displayed (-1 for no limit) (default 50)
      --events              Show events information (default true)
      --general             Show general information (default true)
  -h, --help                help for describe
      --networks            Show networks information (default true)
  -o, --output string       Output format (table, json, yaml) (default "table")
      --pod-limit int32     Limit the number of pods displayed (-1 for no limit) (default 10)
      --pods                Show pods information (default true)
{project}""".replace("{project}", PROJECT_2_18)

DESCRIBE_2_25 = """\
      --compute             Show compute resources information (CPU, GPU, memory, etc.). (default true)
      --containers          Include container-level details in pod information.
      --event-limit int32   Limit the number of events displayed. Use -1 for no limit. (default 50)
      --events              Show recent events for the resource. (default true)
      --general             Show general resource information. (default true)
  -h, --help                help for describe
      --networks            Show network-related information. (default true)
  -o, --output string       Output format: table, json, or yaml. Default is table. (default "table")
      --pod-limit int32     Limit the number of pods displayed. Use -1 for no limit. (default 10)
      --pods                Show information about pods associated with the resource. (default true)
{project}
      --sortEvents string   Sort events in ascending or descending order. Valid values: asc, desc. (default "asc")
      --storage             Show storage information (PVCs, ConfigMaps, Secrets, etc.). (default true)""".replace(
    "{project}", PROJECT_2_25
)

LOGS_2_18 = """\
  -c, --container string        Container name for log extraction
  -f, --follow                  Follow log output
  -h, --help                    help for logs
      --limit-bytes int         Limit the number of bytes returned from the server
      --name string             Set workload name for log extraction
      --pod string              Workload pod ID for log extraction, default: master (0-0)
      --previous                Show previous pod log output
{project}
      --since duration          Return logs newer than a relative duration like 5s, 2m, or 3h. Defaults to all logs
      --since-time string       Return logs after a specific date (RFC3339)
  -t, --tail int                Numer of tailed lines to fetch from the log, for no limit set to -1 (default -1)
      --timestamps              Show timestamps in log output
      --wait-timeout duration   Timeout for waiting for workload to be ready for log streaming""".replace(
    "{project}", PROJECT_2_18
)

LOGS_2_25 = """\
  -c, --container string        The name of the container within the pod.
  -f, --follow                  Stream logs in real time.
  -h, --help                    help for logs
      --limit-bytes int         Maximum bytes of logs to return. Defaults to no limit (e.g, 20, 2000).
      --name string             The name of the workload. Must match the name used at submission.
      --pod string              The pod ID. If not specified, the first pod will be used.
      --previous                Show logs from the previous instance of the pod, if it was restarted.
{project}
      --since duration          Show logs newer than a relative duration (e.g., 5s, 2m, 3h).
      --since-time string       Show logs generated after a specific RFC3339 timestamp (e.g. 2025-05-25T14:30:00Z).
  -t, --tail int                The number of log lines to display from the end of the logs. Use -1 to show all lines. (default -1)
      --timestamps              Include timestamps in log output.
      --wait-timeout duration   Timeout while waiting for the workload to become ready for log streaming (e.g., 5s, 2m, 3h).""".replace(
    "{project}", PROJECT_2_25
)

LIST_2_18 = """\
  -A, --all                list workloads from all projects
      --framework string   filter by workload framework
  -h, --help               help for list
      --json               Output structure JSON
      --limit int32        number of workload in list (default 50)
      --no-headers         Output structure table without headers
      --offset int32       offset number of limit, default 0 (first offset)
{project}
      --status string      filter by workload state
      --table              Output structure table
      --yaml               Output structure YAML""".replace("{project}", PROJECT_2_18)

LIST_2_25 = """\
  -A, --all                     Show resources from all projects
      --columns strings         Specify which columns to display (comma-separated list)
      --deleted                 Return only resources that have been deleted.
      --framework string        Filter by workload framework (TensorFlow, PyTorch, MPI, XGBoost, JAX).
  -h, --help                    help for list
      --json                    Output structure JSON
      --max-items int32         set the max number of items to return, default is all of the items
      --next-token next_token   set the token for requesting the next page
      --no-headers              Output structure table without headers
      --no-pagination           return a single page instead of full list, by default set to false
      --page-size int32         set the single page size (default 100)
{project}
      --raw                     Return the unprocessed response from the API call
      --set-default-columns     [Experimental] Set the columns flag value to the default output
      --status string           Filter by workload state (e.g., Pending, Running, Completed, Failed, Stopped, Initializing).
      --table                   Output structure table
      --yaml                    Output structure YAML""".replace("{project}", PROJECT_2_25)

EXEC_2_18 = """\
  -c, --container string               Container name for log extraction
  -h, --help                           help for exec
      --pod string                     Workload pod ID for log extraction, default: master (0-0)
      --pod-running-timeout duration   Pod check for running state timeout.
{project}
  -i, --stdin                          Pass stdin to the container
  -t, --tty                            Stdin is a TTY
      --wait-timeout duration          Timeout for waiting for workload to be ready for log streaming""".replace(
    "{project}", PROJECT_2_18
)

EXEC_2_25 = """\
  -c, --container string               The name of the container within the pod.
  -h, --help                           help for exec
      --pod string                     The pod ID. If not specified, the first pod will be used.
      --pod-running-timeout duration   Timeout for pod to reach running state (e.g. 5s, 2m, 3h).
{project}
  -i, --stdin                          Pass stdin to the container
  -t, --tty                            Stdin is a TTY
      --wait-timeout duration          Timeout while waiting for the workload to become ready (e.g., 5s, 2m, 3h).""".replace(
    "{project}", PROJECT_2_25
)

PORT_FORWARD_2_18 = """\
      --address string                 --address [local-interface-ip\\host] --address localhost --address 0.0.0.0 [privileged] (default "localhost")
  -h, --help                           help for port-forward
      --pod string                     Workload pod ID for port-forward, default: distributed(master) otherwise(random)
      --pod-running-timeout duration   Pod check for running state timeout.
      --port stringArray               port
{project}""".replace("{project}", PROJECT_2_18)

PORT_FORWARD_2_25 = PORT_FORWARD_2_18.replace(PROJECT_2_18, PROJECT_2_25)

ACTION_2_18 = """\
  -h, --help             help for {verb}
{project}
  -u, --uuid string      The UUID of the workload""".replace("{project}", PROJECT_2_18)
ACTION_2_25 = ACTION_2_18.replace(PROJECT_2_18, PROJECT_2_25)

VERBS_2_18 = {
    "attach": "attach to a running container in a pytorch training job",
    "delete": "delete pytorch training workload",
    "describe": "describe pytorch training",
    "exec": "execute a command in a training pytorch job",
    "list": "list pytorch training",
    "logs": "view logs of a pytorch training job",
    "port-forward": "forward one or more local ports to a pytorch training job",
    "submit": "submit pytorch training",
}
VERBS_2_25 = {
    "attach": "attach to a running container in a pytorch training workload",
    "bash": "open a bash shell in a pytorch training workload",
    "delete": "delete a pytorch training workload",
    "describe": "describe a pytorch training workload",
    "exec": "execute a command in a pytorch training workload",
    "list": "list pytorch training workloads",
    "logs": "view logs of a pytorch training workload",
    "port-forward": "forward one or more local ports to a pytorch training workload",
    "resume": "resume pytorch training",
    "submit": "submit a pytorch training workload",
    "suspend": "suspend a pytorch training workload",
}
# `runai training`'s subcommands: 2.18-2.20 (run-ai/docs new-cli/runai_training*.md: list,
# pytorch and the standard-training verbs); 2.25/v3.0 add a word per framework (docs/runai-cli.md
# §1.1).
TRAINING_2_18 = {
    "attach": "attach to a running container in a training job",
    "delete": "delete training workload",
    "describe": "describe training",
    "list": "list training",
    "logs": "view logs of a training job",
    "pytorch": "pytorch management",
    "submit": "submit training",
}
TRAINING_2_25 = {
    "describe": "describe a standard training workload",
    "jax": "jax management",
    "list": "list all training frameworks",
    "mpi": "mpi management",
    "pytorch": "pytorch management",
    "standard": "standard training management",
    "tensorflow": "tensorflow management",
    "xgboost": "xgboost management",
}
FAMILIES_2_25 = ("standard", "tensorflow", "mpi", "xgboost", "jax")

# Each CLI: its global flags, each command's (short description, local flags) and each group's
# subcommands. `training list` is the list runai-tui reads.


def _cli(
    global_flags: str,
    verbs: dict[str, str],
    submit: str,
    describe: str,
    logs: str,
    listing: str,
    exec_: str,
    port_forward: str,
    action: str,
    training: dict[str, str],
    families: tuple[str, ...] = (),
) -> dict[str, object]:
    leaves = {
        ("training", "list"): ("list training", listing),
        ("training", "pytorch", "submit"): (verbs["submit"], submit),
        ("training", "pytorch", "describe"): (verbs["describe"], describe),
        ("training", "pytorch", "logs"): (verbs["logs"], logs),
        ("training", "pytorch", "exec"): (verbs["exec"], exec_),
        ("training", "pytorch", "port-forward"): (verbs["port-forward"], port_forward),
        ("training", "pytorch", "list"): (verbs["list"], listing),
    }
    for verb in ("delete", "suspend", "resume", "attach", "bash"):
        if verb in verbs:
            leaves[("training", "pytorch", verb)] = (verbs[verb], action.replace("{verb}", verb))
    groups = {
        (): {"training": "training management", "version": "show the current version"},
        ("training",): training,
        ("training", "pytorch"): verbs,
    }
    # The other frameworks' verbs take the same flags as pytorch's.
    for family in families:
        groups[("training", family)] = {v: d for v, d in verbs.items() if v != "submit"}
        for verb in groups[("training", family)]:
            leaf = leaves.get(("training", "pytorch", verb))
            if leaf is not None:
                leaves[("training", family, verb)] = leaf
    return {"global": global_flags, "leaves": leaves, "groups": groups}


CLIS: dict[str, dict[str, object]] = {
    "2.18": _cli(
        GLOBAL_2_18, VERBS_2_18, SUBMIT_2_18, DESCRIBE_2_18, LOGS_2_18, LIST_2_18,
        EXEC_2_18, PORT_FORWARD_2_18, ACTION_2_18, TRAINING_2_18,
    ),
    "2.25": _cli(
        GLOBAL_2_25, VERBS_2_25, SUBMIT_2_25, DESCRIBE_2_25, LOGS_2_25, LIST_2_25,
        EXEC_2_25, PORT_FORWARD_2_25, ACTION_2_25, TRAINING_2_25, FAMILIES_2_25,
    ),
    "3.0": _cli(
        GLOBAL_2_25, VERBS_2_25, SUBMIT_2_25, DESCRIBE_2_25, LOGS_2_25, LIST_2_25,
        EXEC_2_25, PORT_FORWARD_2_25, ACTION_2_25, TRAINING_2_25, FAMILIES_2_25,
    ),
}  # fmt: skip

# CLI v1 (run-ai/runai-cli, cmd/): its top-level commands; `runai training` does not exist.
V1_COMMANDS = {
    "submit": "Submit a new job",
    "submit-dist": "Submit a new distributed job",
    "list": "Display resource list. By default displays the job list",
    "describe": "Display detailed information about resources",
    "logs": "Print the logs of a job",
    "delete": "Delete resources",
    "version": "Print version information",
}

# What `runai version` prints: deliberately ambiguous, the same for every fake.
VERSION = "Version: 2.25.0\nBuildDate: 2025-01-01T00:00:00Z\n"
