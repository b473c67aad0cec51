# Inputs of the RL Arena deployment. Put secrets in secrets.tfvars (git-ignored), e.g.
#   do_token = "dop_v1_..."
# and everything else in terraform.tfvars (see terraform.tfvars.example).

variable "do_token" {
  description = "DigitalOcean API token (read+write). Also given to the autoscaler when autoscaler_enabled."
  type        = string
  sensitive   = true
}

variable "name" {
  description = "Prefix of every resource name and tag (worker names, which are also their Celery and database role names, derive from it)."
  type        = string
  default     = "rl-arena"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,19}$", var.name))
    error_message = "name must be 1-20 characters: lowercase letters, digits and dashes, starting with a letter."
  }
}

variable "region" {
  description = "DigitalOcean region slug; the VPC and every droplet live there."
  type        = string
  default     = "fra1"
}

variable "vpc_ip_range" {
  description = "Private network of the deployment (CIDR). Postgres, Redis, the registry and the join service answer only inside it."
  type        = string
  default     = "10.42.0.0/20"
}

variable "admin_cidrs" {
  description = "Addresses allowed to SSH (port 22) into the droplets, e.g. [\"203.0.113.7/32\"]. Empty: no SSH."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for cidr in var.admin_cidrs : !contains(["0.0.0.0/0", "::/0"], cidr)])
    error_message = "admin_cidrs must not open SSH to the whole internet."
  }
}

variable "ssh_key_fingerprints" {
  description = "Fingerprints (or ids) of SSH keys already uploaded to DigitalOcean, installed on every droplet."
  type        = list(string)
  default     = []
}

variable "droplet_image" {
  description = "Base image of every droplet (a distribution slug or a snapshot id). Cloud-init expects Ubuntu/Debian."
  type        = string
  default     = "ubuntu-24-04-x64"
}

variable "main_size" {
  description = "Droplet size of the main machine (nginx, web, Postgres, Redis, manager, publisher)."
  type        = string
  default     = "s-2vcpu-4gb"
}

variable "main_worker_count" {
  description = "Celery workers (builds, smoke tests, duels) on the main machine itself; 0 keeps it for the web."
  type        = number
  default     = 0
}

variable "worker_size" {
  description = "Droplet size of each worker machine."
  type        = string
  default     = "s-2vcpu-4gb"
}

variable "worker_count" {
  description = "Worker droplets created by terraform (the autoscaler may add more, tagged <name>-worker-auto)."
  type        = number
  default     = 1

  validation {
    condition     = var.worker_count >= 0 && var.worker_count <= 50
    error_message = "worker_count must be between 0 and 50."
  }
}

variable "worker_concurrency" {
  description = "Duels/builds one worker droplet runs at once (WORKER_CONCURRENCY); about one per vCPU."
  type        = number
  default     = 2
}

variable "repo_url" {
  description = "Git repository every droplet clones and builds the platform image from."
  type        = string
  default     = "https://github.com/rl-arena/rl-arena.git"
}

variable "repo_ref" {
  description = "Branch, tag or commit to deploy (pin a tag in production)."
  type        = string
  default     = "main"
}

variable "domain" {
  description = "Public host name (ALLOWED_HOSTS, CSRF origin, certbot). Empty: use the main droplet's IP."
  type        = string
  default     = ""
}

variable "agent_registry" {
  description = "Where agent images live (AGENT_REGISTRY, host[:port]/prefix). Empty: the Distribution registry on the main droplet, on its private address only, with a generated password. Else a managed registry, e.g. registry.digitalocean.com/<your-registry>."
  type        = string
  default     = ""
}

variable "agent_registry_username" {
  description = "User name for a managed agent_registry (DigitalOcean Container Registry: any non-empty name with a registry token as password). Unused with the main droplet's registry."
  type        = string
  default     = ""
}

variable "agent_registry_password" {
  description = "Password or token for a managed agent_registry. Given to workers through the join service, never in their user-data."
  type        = string
  default     = ""
  sensitive   = true
}

variable "join_port" {
  description = "Port of the join service on the main droplet's private address (workers fetch their settings there once, with a one-time ticket)."
  type        = number
  default     = 8471
}

variable "autoscaler_enabled" {
  description = "Run the autoscaler on the main droplet (it receives do_token in its .env, mode 0600)."
  type        = bool
  default     = false
}

variable "autoscaler_min_workers" {
  description = "Floor of autoscaled worker droplets (in addition to worker_count)."
  type        = number
  default     = 0
}

variable "autoscaler_max_workers" {
  description = "Ceiling of autoscaled worker droplets (in addition to worker_count)."
  type        = number
  default     = 5
}
