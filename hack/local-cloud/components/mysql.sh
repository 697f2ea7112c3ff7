# MariaDB for Neutron and Octavia: its own datadir, socket and port, so it
# never touches a system instance. SQLite cannot run their migrations.

MYSQL_DIR=$CLOUD_STATE/mysql
MYSQL_SOCK=$CLOUD_RUN/mysql.sock
MYSQL_PASSWORD=kuryr-local
DB_URL_BASE="mysql+pymysql://cloud:$MYSQL_PASSWORD@127.0.0.1:$MYSQL_PORT"

# MariaDB 11.8 (2025.1) checks snapshot isolation by default: a row changed
# since a REPEATABLE READ transaction's snapshot fails it with error 1020,
# which Octavia's quota accounting (SELECT ... FOR UPDATE of one row per
# project) cannot retry: concurrent member deletions then leave load
# balancers PENDING_UPDATE for good. OpenStack is written for the classic
# behaviour, as its deployment tools configure it.
MYSQL_RELEASE_OPTS=(--innodb-snapshot-isolation=OFF)

mysql_cli() { "${IN_ROOT[@]}" mariadb --no-defaults -uroot -S "$MYSQL_SOCK" "$@"; }

start_mysql() {
  mkdir -p "$CLOUD_RUN"
  if [ ! -d "$MYSQL_DIR/mysql" ]; then
    mkdir -p "$MYSQL_DIR"
    run_logged mysql-install "${IN_ROOT[@]}" mariadb-install-db --no-defaults --datadir="$MYSQL_DIR" --user=root \
      --auth-root-authentication-method=socket --skip-test-db
  fi
  # Durability is worthless for a throwaway cloud; fsyncs are the main cost
  # of the migrations.
  start_bg mysql -- "${IN_ROOT[@]}" mariadbd --no-defaults --datadir="$MYSQL_DIR" --user=root \
    --socket="$MYSQL_SOCK" --port="$MYSQL_PORT" --bind-address=127.0.0.1 \
    --pid-file="$CLOUD_RUN/mysql.pidfile" --skip-log-bin \
    --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --sync-binlog=0 \
    --innodb-buffer-pool-size=128M --max-connections=1000 --skip-name-resolve "${MYSQL_RELEASE_OPTS[@]}"
  wait_for mysql 30 mysql_cli -e 'select 1'
  mysql_cli -e "
    CREATE USER IF NOT EXISTS 'cloud'@'127.0.0.1' IDENTIFIED BY '$MYSQL_PASSWORD';
    CREATE DATABASE IF NOT EXISTS neutron;
    CREATE DATABASE IF NOT EXISTS octavia;
    CREATE DATABASE IF NOT EXISTS keystone;
    GRANT ALL ON *.* TO 'cloud'@'127.0.0.1';"
}

# empty_db DB: DB dropped and made again, empty (a partial restore's
# marker gone with its tables).
empty_db() { mysql_cli -e "DROP DATABASE $1; CREATE DATABASE $1" && rm -f "$MYSQL_DIR/$1.restoring"; }

# db_migrate DB LOG CMD...: DB's contents made by CMD (its migrations) the
# first time, then restored from the dump of them (kept per root, command
# and, for a shell function, its body) into an empty DB: each migration run
# is a Python process that takes 10-15 s on a busy 2-core machine while the
# others start, a restore about a second.
db_migrate() {
  local db=$1 name=$2; shift 2
  local dump tables mark=$MYSQL_DIR/$db.restoring
  # A restore cut short left some tables (alembic's version among the
  # first): the database is made again from empty.
  if [ -e "$mark" ]; then
    empty_db "$db" || die "emptying database $db after a partial restore"
  fi
  # A cloud brought up again (make up twice) keeps its database: a restore
  # would replace its projects, networks and load balancers with the
  # dump's, under services that hold their ids. Its migrations are
  # idempotent.
  tables=$(mysql_cli -N -e "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$db'") \
    || die "counting the tables of database $db"
  [[ $tables =~ ^[0-9]+$ ]] || die "counting the tables of database $db: got '$tables'"
  if [ "$tables" -gt 0 ]; then
    run_logged "$name" "$@"
    return
  fi
  dump=$CLOUD_CACHE/db/$db-$({ readlink -f "$CLOUD_ROOT"; echo "$*"; declare -f "$1" || true; } \
    | sha256sum | cut -c1-16).sql
  if [ -s "$dump" ]; then
    : >"$mark"
    if mysql_cli "$db" <"$dump" 2>"$CLOUD_LOG_DIR/$name.log"; then
      rm -f "$mark"
      echo "restored from $dump" >>"$CLOUD_LOG_DIR/$name.log"
      return 0
    fi
    empty_db "$db" || true # the marker stays: the next make up empties it
  fi
  run_logged "$name" "$@"
  mkdir -p "$CLOUD_CACHE/db"
  "${IN_ROOT[@]}" mariadb-dump --no-defaults -uroot -S "$MYSQL_SOCK" --single-transaction "$db" >"$dump.tmp" \
    && mv "$dump.tmp" "$dump" || rm -f "$dump.tmp"
}
