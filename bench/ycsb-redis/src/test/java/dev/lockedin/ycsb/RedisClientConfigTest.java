package dev.lockedin.ycsb;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.Properties;

import org.junit.jupiter.api.Test;
import site.ycsb.DBException;

/** Set-up failures that need no server: they must fail {@code init}, not the first operation. */
class RedisClientConfigTest {
  private static RedisClient client(String... kv) {
    RedisClient c = new RedisClient();
    Properties props = new Properties();
    for (int i = 0; i < kv.length; i += 2) {
      props.setProperty(kv[i], kv[i + 1]);
    }
    c.setProperties(props);
    return c;
  }

  @Test
  void nothingListeningFailsInit() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    RedisClient c = client("redis.host", "127.0.0.1", "redis.port", Integer.toString(port),
        "redis.timeout", "1000");
    DBException e = assertThrows(DBException.class, c::init);
    assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
  }

  @Test
  void badPropertiesFailInit() {
    assertThrows(DBException.class, client("redis.port", "sixty")::init);
    assertThrows(DBException.class, client("redis.port", "0")::init);
    assertThrows(DBException.class, client("redis.timeout", "-5")::init);
    assertThrows(DBException.class, client("redis.write", "set")::init);
  }
}
