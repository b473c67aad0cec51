# RL Arena on DigitalOcean: one main droplet (nginx, web, Postgres, Redis, manager, publisher) and
# var.worker_count worker droplets that join it over the VPC. See README.md.

locals {
  worker_tag      = "${var.name}-worker"
  auto_worker_tag = "${var.name}-worker-auto"
  public_host     = var.domain != "" ? var.domain : digitalocean_reserved_ip.main.ip_address

  # A worker's user-data is readable from the droplet's metadata service, by an agent build with network
  # too: it holds no password and no SECRET_KEY, only a one-time join ticket. At first boot the worker
  # trades the ticket at the main droplet's join service (private network) for its settings: a database
  # role of its own, the Redis URL and the registry's credentials (autoscaler/join.py, README.md).
  worker_template_vars = {
    repo_url           = var.repo_url
    repo_ref           = var.repo_ref
    worker_concurrency = var.worker_concurrency
    vpc_ip_range       = var.vpc_ip_range
    join_port          = var.join_port
  }
  worker_names = [for i in range(var.worker_count) : "${var.name}-worker-${i + 1}"]
  # <name>.<nonce>.<mac>, mac = sha256(key:sha256(key:name:nonce)) (terraform has no HMAC; see join.py).
  worker_join_tickets = [
    for i, worker in local.worker_names :
    "${worker}.${random_id.worker_join[i].hex}.${sha256("${random_password.join_key.result}:${sha256("${random_password.join_key.result}:${worker}:${random_id.worker_join[i].hex}")}")}"
  ]
  worker_user_data = [
    for i, worker in local.worker_names : templatefile("${path.module}/cloud-init/worker.yaml.tftpl", merge(local.worker_template_vars, {
      main_private_ip = digitalocean_droplet.main.ipv4_address_private
      worker_name     = worker
      join_ticket     = local.worker_join_tickets[i]
    }))
  ]
  # The same cloud-init for the autoscaler's droplets, kept on the main droplet as a template: the main
  # droplet fills in its own address at boot (naming it here would be a cycle), the autoscaler each
  # droplet's name and a ticket minted for it.
  worker_user_data_for_autoscaler = templatefile("${path.module}/cloud-init/worker.yaml.tftpl", merge(local.worker_template_vars, {
    main_private_ip = "__MAIN_PRIVATE_IP__"
    worker_name     = "__WORKER_NAME__"
    join_ticket     = "__JOIN_TICKET__"
  }))
}

# Signs the workers' join tickets; known only to terraform's state and the main droplet.
resource "random_password" "join_key" {
  length  = 64
  special = false
}

# One ticket nonce per terraform worker. A ticket is spent at first boot: to rebuild worker N, replace its
# nonce (terraform apply -replace='random_id.worker_join[N-1]'), which gives the droplet a new user-data.
resource "random_id" "worker_join" {
  count       = var.worker_count
  byte_length = 16
}

resource "random_password" "postgres" {
  length  = 32
  special = false
}

resource "random_password" "redis" {
  length  = 32
  special = false
}

resource "random_password" "secret_key" {
  length  = 64
  special = false
}

resource "digitalocean_vpc" "arena" {
  name     = "${var.name}-vpc"
  region   = var.region
  ip_range = var.vpc_ip_range
}

resource "digitalocean_tag" "main" {
  name = "${var.name}-main"
}

resource "digitalocean_tag" "worker" {
  name = local.worker_tag
}

resource "digitalocean_tag" "auto_worker" {
  name = local.auto_worker_tag
}

resource "digitalocean_droplet" "main" {
  name       = "${var.name}-main"
  region     = var.region
  size       = var.main_size
  image      = var.droplet_image
  vpc_uuid   = digitalocean_vpc.arena.id
  ssh_keys   = var.ssh_key_fingerprints
  tags       = [digitalocean_tag.main.id]
  monitoring = true
  ipv6       = true

  user_data = templatefile("${path.module}/cloud-init/main.yaml.tftpl", {
    repo_url                = var.repo_url
    repo_ref                = var.repo_ref
    vpc_ip_range            = var.vpc_ip_range
    postgres_password       = random_password.postgres.result
    redis_password          = random_password.redis.result
    secret_key              = random_password.secret_key.result
    join_key                = random_password.join_key.result
    join_port               = var.join_port
    domain                  = var.domain
    main_worker_count       = var.main_worker_count
    worker_concurrency      = var.worker_concurrency
    agent_registry          = var.agent_registry
    agent_registry_username = var.agent_registry_username
    agent_registry_password = var.agent_registry_password
    autoscaler_enabled      = var.autoscaler_enabled
    worker_user_data_b64    = base64encode(local.worker_user_data_for_autoscaler)
    autoscaler_env = indent(6, join("\n", [
      "AUTOSCALER_DO_TOKEN=${var.autoscaler_enabled ? var.do_token : ""}",
      "AUTOSCALER_DO_REGION=${var.region}",
      "AUTOSCALER_DO_SIZE=${var.worker_size}",
      "AUTOSCALER_DO_IMAGE=${var.droplet_image}",
      "AUTOSCALER_DO_VPC_UUID=${digitalocean_vpc.arena.id}",
      "AUTOSCALER_DO_TAG=${local.auto_worker_tag}",
      "AUTOSCALER_DO_SSH_KEYS=${join(",", var.ssh_key_fingerprints)}",
      "AUTOSCALER_DO_USER_DATA_FILE=/data/autoscaler/worker-cloud-init.yaml",
      "AUTOSCALER_JOIN_KEY=${random_password.join_key.result}",
      "AUTOSCALER_MIN_WORKERS=${var.autoscaler_min_workers}",
      "AUTOSCALER_MAX_WORKERS=${var.autoscaler_max_workers}",
    ]))
  })

  lifecycle {
    # A new cloud-init (e.g. another repo_ref) must not silently recreate the database machine.
    ignore_changes = [user_data]
  }
}

# The public address survives a rebuild of the main droplet; point DNS at it.
resource "digitalocean_reserved_ip" "main" {
  region = var.region
}

resource "digitalocean_reserved_ip_assignment" "main" {
  ip_address = digitalocean_reserved_ip.main.ip_address
  droplet_id = digitalocean_droplet.main.id
}

resource "digitalocean_droplet" "worker" {
  count      = var.worker_count
  name       = local.worker_names[count.index]
  region     = var.region
  size       = var.worker_size
  image      = var.droplet_image
  vpc_uuid   = digitalocean_vpc.arena.id
  ssh_keys   = var.ssh_key_fingerprints
  tags       = [digitalocean_tag.worker.id]
  monitoring = true
  user_data  = local.worker_user_data[count.index]
}

# Main: the world reaches only nginx (80/443); SSH only from admin_cidrs; Postgres, Redis, the agent
# registry and the join service only from the VPC (no file sharing: workers mount nothing).
resource "digitalocean_firewall" "main" {
  name        = "${var.name}-main"
  droplet_ids = [digitalocean_droplet.main.id]

  inbound_rule {
    protocol         = "tcp"
    port_range       = "80"
    source_addresses = ["0.0.0.0/0", "::/0"]
  }

  inbound_rule {
    protocol         = "tcp"
    port_range       = "443"
    source_addresses = ["0.0.0.0/0", "::/0"]
  }

  dynamic "inbound_rule" {
    for_each = length(var.admin_cidrs) > 0 ? [1] : []
    content {
      protocol         = "tcp"
      port_range       = "22"
      source_addresses = var.admin_cidrs
    }
  }

  inbound_rule {
    protocol         = "tcp"
    port_range       = "5432"
    source_addresses = [var.vpc_ip_range]
  }

  inbound_rule {
    protocol         = "tcp"
    port_range       = "6379"
    source_addresses = [var.vpc_ip_range]
  }

  inbound_rule {
    protocol         = "tcp"
    port_range       = "5000"
    source_addresses = [var.vpc_ip_range]
  }

  inbound_rule {
    protocol         = "tcp"
    port_range       = tostring(var.join_port)
    source_addresses = [var.vpc_ip_range]
  }

  outbound_rule {
    protocol              = "tcp"
    port_range            = "1-65535"
    destination_addresses = ["0.0.0.0/0", "::/0"]
  }

  outbound_rule {
    protocol              = "udp"
    port_range            = "1-65535"
    destination_addresses = ["0.0.0.0/0", "::/0"]
  }

  outbound_rule {
    protocol              = "icmp"
    destination_addresses = ["0.0.0.0/0", "::/0"]
  }
}

# Workers (terraform's and the autoscaler's, by tag): nothing inbound except SSH from admin_cidrs.
resource "digitalocean_firewall" "workers" {
  name = "${var.name}-workers"
  tags = [digitalocean_tag.worker.id, digitalocean_tag.auto_worker.id]

  dynamic "inbound_rule" {
    for_each = length(var.admin_cidrs) > 0 ? [1] : []
    content {
      protocol         = "tcp"
      port_range       = "22"
      source_addresses = var.admin_cidrs
    }
  }

  outbound_rule {
    protocol              = "tcp"
    port_range            = "1-65535"
    destination_addresses = ["0.0.0.0/0", "::/0"]
  }

  outbound_rule {
    protocol              = "udp"
    port_range            = "1-65535"
    destination_addresses = ["0.0.0.0/0", "::/0"]
  }

  outbound_rule {
    protocol              = "icmp"
    destination_addresses = ["0.0.0.0/0", "::/0"]
  }
}
