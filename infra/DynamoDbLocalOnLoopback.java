// Starts DynamoDB Local listening on one address only (its own launcher binds every interface).
//
//   java -Djava.library.path=<emulator>/DynamoDBLocal_lib -cp <emulator>/DynamoDBLocal.jar \
//        infra/DynamoDbLocalOnLoopback.java <address> <DynamoDB Local's own options...>
//
// Everything is looked up by name, so this file compiles without DynamoDB Local's jars and
// runs with Java's single-file launcher. DynamoDB Local builds its Jetty server with one
// connector on the given port; the connector's host is set before the server starts.

import java.lang.reflect.Field;
import java.util.Arrays;

public class DynamoDbLocalOnLoopback {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: DynamoDbLocalOnLoopback <address> [DynamoDB Local options]");
            System.exit(2);
        }
        String address = args[0];
        String[] options = Arrays.copyOfRange(args, 1, args.length);

        Class<?> runner = Class.forName("com.amazonaws.services.dynamodbv2.local.main.ServerRunner");
        Object proxy = runner.getMethod("createServerFromCommandLineArgs", String[].class)
                .invoke(null, (Object) options);

        Field field = proxy.getClass().getDeclaredField("server");
        field.setAccessible(true);
        Object jetty = field.get(proxy);
        Object[] connectors = (Object[]) jetty.getClass().getMethod("getConnectors").invoke(jetty);
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local's server has no connector to bind");
        }
        for (Object connector : connectors) {
            connector.getClass().getMethod("setHost", String.class).invoke(connector, address);
        }

        proxy.getClass().getMethod("start").invoke(proxy);
        System.out.println("DynamoDB Local listening on " + address);
    }
}
